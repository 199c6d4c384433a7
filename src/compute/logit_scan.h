// One pass over a logits row for scoring the token that actually came next
// (the observer's surprisal, entropy, rank and top-k): the row's maximum, the
// softmax normaliser and its first moment, the target's rank and the best k
// ids. The scalar level is the double-precision reference; the SIMD levels
// (logit_scan_avx2.cpp) compute exp in float and accumulate in double.
#pragma once

#include <cstddef>
#include <cstdint>

#include "compute/cpu_level.h"

namespace seam::logit {

// NaN logits count as -inf throughout (probability 0, ranked last).
struct Scan {
  float max = 0;            // the largest non-NaN logit (-inf when there is none)
  double sum_exp = 0;       // Z = sum_v e^(d_v), d_v = l_v - max, over l_v > -inf
  double sum_exp_d = 0;     // sum_v e^(d_v) d_v (so entropy = log Z - sum_exp_d / Z)
  std::uint32_t above = 0;  // #{v : l_v > l_t, or l_v == l_t and v < t}; rank = above + 1
};

// The SIMD levels' exp(d) for d <= 0 has a relative error of at most this
// (tested against double exp over [-87, 0]); terms with d < -87 (< 1.7e-38 of
// the largest) count as 0. The scalar level uses double exp.
inline constexpr double kExpRelErr = 4.0 / (1 << 24);

// Scans row[0, n) for target t < n. Writes the best min(k, n) ids to top[0..),
// best first (higher logit, then lower id). Any k; the SIMD levels hand k > kScanMaxTop
// to the scalar reference.
using ScanFn = Scan (*)(const float* row, std::size_t n, std::uint32_t t, std::uint32_t k,
                        std::uint32_t* top);
inline constexpr std::uint32_t kScanMaxTop = 64;

// The scan of `level` (the highest present at or below it).
ScanFn scan_fn(CpuLevel level);
// The scan of active_cpu_level().
ScanFn scan_fn();

namespace scalar {
Scan scan(const float* row, std::size_t n, std::uint32_t t, std::uint32_t k, std::uint32_t* top);
}  // namespace scalar

namespace avx2 {
Scan scan(const float* row, std::size_t n, std::uint32_t t, std::uint32_t k, std::uint32_t* top);
}  // namespace avx2

}  // namespace seam::logit
