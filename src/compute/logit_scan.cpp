#include "compute/logit_scan.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace seam::logit {

namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
}  // namespace

namespace scalar {

Scan scan(const float* row, std::size_t n, std::uint32_t t, std::uint32_t k, std::uint32_t* top) {
  Scan s;
  float mx = kNegInf;
  for (std::size_t v = 0; v < n; ++v)
    if (row[v] > mx) mx = row[v];  // NaN compares false: skipped
  s.max = mx;
  for (std::size_t v = 0; v < n; ++v) {
    const float l = row[v];
    if (!(l > kNegInf)) continue;  // -inf or NaN: p = 0
    const double d = static_cast<double>(l) - mx;
    const double e = std::exp(d);
    s.sum_exp += e;
    s.sum_exp_d += e * d;
  }
  const float tf = row[t];
  for (std::size_t v = 0; v < n; ++v) {
    const float l = row[v];
    if (l > tf || (l == tf && v < t) || (std::isnan(tf) && !std::isnan(l) && v < t)) ++s.above;
  }
  k = static_cast<std::uint32_t>(std::min<std::size_t>(k, n));
  if (k > 0) {
    // A min-heap of the best k (worst at the front): better = higher logit, then lower id.
    const auto key = [&](std::uint32_t v) { return std::isnan(row[v]) ? kNegInf : row[v]; };
    const auto better = [&](std::uint32_t a, std::uint32_t b) {
      return key(a) > key(b) || (key(a) == key(b) && a < b);
    };
    std::vector<std::uint32_t> heap;
    heap.reserve(k + 1);
    for (std::uint32_t v = 0; v < n; ++v) {
      if (heap.size() < k) {
        heap.push_back(v);
        std::push_heap(heap.begin(), heap.end(), better);
      } else if (better(v, heap.front())) {
        std::pop_heap(heap.begin(), heap.end(), better);
        heap.back() = v;
        std::push_heap(heap.begin(), heap.end(), better);
      }
    }
    std::sort(heap.begin(), heap.end(), better);
    std::copy(heap.begin(), heap.end(), top);
  }
  return s;
}

}  // namespace scalar

ScanFn scan_fn(CpuLevel level) { return level >= CpuLevel::Avx2 ? avx2::scan : scalar::scan; }

ScanFn scan_fn() {
  static const ScanFn fn = scan_fn(active_cpu_level());
  return fn;
}

}  // namespace seam::logit
