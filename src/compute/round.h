// Round half to even without a libm call, for the weight quantizers' inner
// loops (a call per value also keeps GCC from unrolling them).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>

namespace seam::quant {

// Round to nearest, ties to even (the default rounding mode), as ggml's
// nearest_int: adding 1.5 * 2^23 leaves the rounded integer in the low
// mantissa bits. That holds for |v| < 2^22; beyond it the result saturates at
// +-(2^22 - 1), which every caller clamps to a few bits anyway, and NaN gives 0.
inline int nearest_int(float v) {
  constexpr float kLimit = 4194303.0f;
  v = v == v ? std::min(std::max(v, -kLimit), kLimit) : 0.0f;
  const float t = v + 12582912.0f;
  return static_cast<int>(std::bit_cast<std::uint32_t>(t) & 0x007fffffu) - 0x00400000;
}

}  // namespace seam::quant
