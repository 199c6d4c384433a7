// The activation quantizers matmul uses at each CPU level (quant::act_quantizer)
// against quant::quantize_row, the reference rules. Compared byte for byte: the
// SIMD versions do the same single IEEE operations per element (a product, a
// max, a rounding; no float sums whose order could differ), so any difference
// is a bug, not rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "compute/cpu_level.h"
#include "compute/quant.h"
#include "seam/error.h"

namespace seam {
namespace {

// Rows of 7 blocks of 256 (a multiple of both activation block sizes): normal
// values at scales from 1e-30 to 1e30 per block, with zero, subnormal, NaN,
// infinite and half-way values planted in some blocks.
std::vector<float> nasty_row(std::mt19937& rng, int rep) {
  constexpr int kN = 7 * 256;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> pick(0, kN - 1);
  std::vector<float> x(kN);
  const float scales[] = {1.0f, 1e-30f, 1e30f, 3.0f, 1e-3f, 250.0f, 0.5f};
  for (int i = 0; i < kN; ++i) x[i] = normal(rng) * scales[(i / 32 + rep) % 7];
  for (int i = 64; i < 96; ++i) x[i] = 0.0f;                         // an all-zero Q8_0 block
  for (int i = 256; i < 512; ++i) x[i] = (rep % 2 ? -1 : 1) * 0.0f;  // an all-zero Q8_K block
  for (int i = 512; i < 544; ++i) x[i] = 1e-40f * normal(rng);       // subnormals: 1/d overflows
  // Exactly half-way products: amax 127 gives d = 1, id = 1.
  x[1024] = 127.0f;
  for (int i = 1025; i < 1056; ++i) x[i] = static_cast<float>(i % 9 - 4) + 0.5f;
  // Products that round to a half-way value in f32 but are not one exactly:
  // amax 3 gives Q8_K's id = 127 / 3, inexact. A quantizer whose product and
  // rounding a compiler fused into one fma rounds these the other way.
  for (int i = 1280; i < 1536; ++i) x[i] = std::clamp(normal(rng), -2.0f, 2.0f);
  x[1280] = 3.0f;
  const float id = 127.0f / 3.0f;
  int planted = 0;
  for (int m = 0; m < 100; ++m) {
    float v = (static_cast<float>(m) + 0.5f) / id;
    for (int k = 0; k < 8; ++k, v = std::nextafter(v, 3.0f)) {
      const volatile float p = v * id;  // volatile: the product rounded, as the reference does
      if (p - std::floor(p) == 0.5f && static_cast<double>(v) * id != static_cast<double>(p)) {
        x[1281 + m] = v;
        ++planted;
        break;
      }
    }
  }
  EXPECT_GT(planted, 20);
  if (rep % 3 == 1) x[pick(rng)] = std::numeric_limits<float>::quiet_NaN();
  if (rep % 3 == 2) x[pick(rng)] = -std::numeric_limits<float>::infinity();
  if (rep % 4 == 3) {  // a tie for the largest |x| with opposite signs (Q8_K keeps the first)
    const int i = 1536 + pick(rng) % 100;
    x[i] = -1e6f;
    x[i + 50] = 1e6f;
  }
  return x;
}

TEST(ActQuantizer, EveryLevelWritesTheReferenceBytes) {
  for (CpuLevel level : {CpuLevel::Scalar, CpuLevel::Avx2, CpuLevel::Avx512, CpuLevel::Amx}) {
    if (level > detected_cpu_level()) continue;
    for (TensorType t : {TensorType::Q8_0, TensorType::Q8_1, TensorType::Q8_K}) {
      const quant::QuantizeFn fn = quant::act_quantizer(t, level);
      std::mt19937 rng(99);
      for (int rep = 0; rep < 24; ++rep) {
        const std::vector<float> x = nasty_row(rng, rep);
        const auto n = static_cast<std::int64_t>(x.size());
        const std::size_t bytes = quant::row_size(t, n);
        std::vector<std::byte> want(bytes), got(bytes, std::byte{0x5a});
        quant::quantize_row(t, x.data(), want.data(), n);
        fn(x.data(), got.data(), n);
        for (std::size_t b = 0; b < bytes; ++b) {
          ASSERT_EQ(got[b], want[b]) << cpu_level_name(level) << " " << quant::type_name(t)
                                     << " rep " << rep << " byte " << b;
        }
      }
    }
  }
}

TEST(ActQuantizer, RefusesWeightFormats) {
  EXPECT_THROW(quant::act_quantizer(TensorType::Q4_0, CpuLevel::Scalar), Error);
  EXPECT_THROW(quant::act_quantizer(TensorType::F32, detected_cpu_level()), Error);
}

}  // namespace
}  // namespace seam
