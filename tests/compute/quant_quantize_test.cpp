// Quantizers: Q8_0 and Q4_0 against mkgguf.py's numpy port of ggml's reference
// quantizers (bit for bit), and the activation formats Q8_1 / Q8_K against
// their defining rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "compute/quant.h"
#include "compute/quant_blocks.h"
#include "core/half.h"
#include "seam/error.h"

namespace seam {
namespace {

namespace fs = std::filesystem;
using namespace seam::quant;

// Rounding-boundary inputs. ggml's reference quantizers, and the numpy ports
// they are checked against, round the product x * id to float and then add
// the offset (8.5, 16.5, 0.5): two roundings. A fused multiply-add rounds
// once. On most inputs both truncate to the same quant; these are inputs where
// they do not, so a quantizer built with FP contraction (GCC's default with
// -march=native on an FMA machine) fails the bit-exact checks below.
int trunc_two_roundings(float x, float id, float c) {
  volatile float p = x * id;  // volatile: rounded to float here, never fused
  return static_cast<int>(p + c);
}
int trunc_fused(float x, float id, float c) { return static_cast<int>(std::fma(x, id, c)); }

// Up to `want` values in (lo, hi) where the two truncations of x * id + c differ.
std::vector<float> fma_boundaries(float id, float c, float lo, float hi, std::size_t want) {
  std::vector<float> out;
  for (int n = static_cast<int>(std::ceil(std::min(lo * id, hi * id) + c));
       n <= static_cast<int>(std::max(lo * id, hi * id) + c) && out.size() < want; ++n) {
    const float x0 = (static_cast<float>(n) - c) / id;  // x * id + c ~ n
    float up = x0, down = x0;
    bool found = false;  // one value per integer n: boundaries of every quant
    for (int k = 0; k < 4000 && !found; ++k) {
      for (float x : {up, down}) {
        if (!found && x > lo && x < hi && trunc_two_roundings(x, id, c) != trunc_fused(x, id, c)) {
          out.push_back(x);
          found = true;
        }
      }
      up = std::nextafter(up, hi);
      down = std::nextafter(down, lo);
    }
  }
  return out;
}

// A Q4_0 block whose extreme is -7 (d = 0.875, id = 1/d, not exact) and whose
// other 31 values lie on boundaries of x * id + 8.5 where possible (0 elsewhere).
std::vector<float> q4_0_boundary_block() {
  const float id = 1.0f / (-7.0f / -8.0f);
  std::vector<float> b = {-7.0f};
  for (float v : fma_boundaries(id, 8.5f, -6.99f, 6.99f, 31)) b.push_back(v);
  b.resize(32, 0.0f);
  return b;
}

// Values that exercise the rounding rules: ties at half steps, all-zero blocks,
// a negative extreme, repeated extremes (first one wins), subnormals and huge
// magnitudes, a block of FMA rounding boundaries, plus plain Gaussian blocks.
std::vector<float> tricky_values() {
  std::vector<float> v;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int b = 0; b < 40; ++b) {
    for (int j = 0; j < 32; ++j) v.push_back(normal(rng) * (b % 5 == 0 ? 1e-3f : 1.0f));
  }
  v.insert(v.end(), 32, 0.0f);                                                  // all-zero block
  for (int j = 0; j < 32; ++j) v.push_back(static_cast<float>(j - 16) * 0.5f);  // exact ties
  for (int j = 0; j < 32; ++j) v.push_back(j == 5 ? -3.0f : (j == 9 ? 3.0f : 0.1f * j));
  for (int j = 0; j < 32; ++j) v.push_back(static_cast<float>(j % 17) * 127.0f / 16.0f);
  for (int j = 0; j < 32; ++j) v.push_back((j % 2 ? 1e-40f : -2e-39f) * (j + 1));
  for (int j = 0; j < 32; ++j) v.push_back((j % 3 - 1) * 6.0e4f);
  for (int j = 0; j < 32; ++j) v.push_back((j % 2 ? 1e-44f : -3e-45f) * (j + 1));  // 1/d overflows
  const std::vector<float> boundary = q4_0_boundary_block();  // FMA vs two roundings
  v.insert(v.end(), boundary.begin(), boundary.end());
  return v;
}

std::vector<char> slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}

TEST(QuantizeRef, Q8_0AndQ4_0MatchMkgguf) {
  const std::vector<float> x = tricky_values();
  const fs::path dir = fs::path(SEAM_SCRATCH_DIR) / "quant_quantize_test";
  fs::create_directories(dir);
  {
    std::ofstream f(dir / "x.f32", std::ios::binary);
    f.write(reinterpret_cast<const char*>(x.data()), static_cast<std::streamsize>(x.size() * 4));
  }
  {
    std::ofstream py(dir / "q.py");
    py << "import sys, numpy as np\n"
          "sys.path.insert(0, sys.argv[1])\n"
          "import mkgguf\n"
          "x = np.fromfile(sys.argv[2] + '/x.f32', dtype=np.float32)\n"
          "mkgguf.quantize_q8_0(x).tofile(sys.argv[2] + '/x.q8_0')\n"
          "mkgguf.quantize_q4_0(x).tofile(sys.argv[2] + '/x.q4_0')\n";
  }
  const std::string cmd = std::string(SEAM_PYTHON) + " -W ignore " + (dir / "q.py").string() + " " +
                          SEAM_SHARED_DIR + "/tools " + dir.string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;

  const std::int64_t n = static_cast<std::int64_t>(x.size());
  std::vector<char> q8(row_size(TensorType::Q8_0, n)), q4(row_size(TensorType::Q4_0, n));
  quantize_row(TensorType::Q8_0, x.data(), q8.data(), n);
  quantize_row(TensorType::Q4_0, x.data(), q4.data(), n);
  const std::vector<char> ref8 = slurp(dir / "x.q8_0"), ref4 = slurp(dir / "x.q4_0");
  ASSERT_EQ(ref8.size(), q8.size());
  ASSERT_EQ(ref4.size(), q4.size());
  for (std::size_t b = 0; b < q8.size() / 34; ++b) {
    EXPECT_EQ(std::memcmp(q8.data() + 34 * b, ref8.data() + 34 * b, 34), 0) << "Q8_0 block " << b;
  }
  for (std::size_t b = 0; b < q4.size() / 18; ++b) {
    EXPECT_EQ(std::memcmp(q4.data() + 18 * b, ref4.data() + 18 * b, 18), 0) << "Q4_0 block " << b;
  }
}

TEST(QuantizeRef, Q4_0HandComputed) {
  // The extreme is x = -4, so d = -4 / -8 = 0.5 and q = trunc(x / d + 8.5), clamped to 15.
  float x[32] = {};
  x[0] = -4.0f;   // -8 + 8.5 -> 0
  x[1] = 3.75f;   // 7.5 + 8.5 = 16 -> clamped to 15
  x[2] = -0.25f;  // -0.5 + 8.5 = 8 (ties round up)
  x[3] = 0.25f;   // 0.5 + 8.5 = 9
  x[20] = 1.0f;   // element 20 -> high nibble of byte 4: 2 + 8.5 -> 10
  BlockQ4_0 b;
  quantize_row_q4_0(x, &b, 32);
  EXPECT_EQ(fp16_to_f32(b.d), 0.5f);
  EXPECT_EQ(b.qs[0] & 0xF, 0);
  EXPECT_EQ(b.qs[1] & 0xF, 15);
  EXPECT_EQ(b.qs[2] & 0xF, 8);
  EXPECT_EQ(b.qs[3] & 0xF, 9);
  EXPECT_EQ(b.qs[4], 8 | (10 << 4));
}

// The boundary values are real: a fused x * id + c truncates differently on
// each, so a quantizer built with contraction cannot pass Q8_0AndQ4_0MatchMkgguf.
// Q5_0, Q4_1 and Q5_1 have no numpy port: their boundary quants are checked
// against ggml's rule, written out here with the two roundings.
TEST(QuantizeRef, FmaBoundaryInputsFollowTheTwoRoundingRule) {
  const std::vector<float> q4 = q4_0_boundary_block();
  const float id4 = 1.0f / (-7.0f / -8.0f);
  int n4 = 0;
  for (float v : q4) n4 += v != 0.0f && v != -7.0f;
  // Observed: 8 boundaries on the negative side (|x * id| > |x * id + 8.5|).
  EXPECT_GE(n4, 4) << "too few FMA boundaries for Q4_0";
  BlockQ4_0 b4;
  quantize_row_q4_0(q4.data(), &b4, 32);
  ASSERT_EQ(fp16_to_f32(b4.d), 0.875f);
  for (int j = 0; j < 32; ++j) {
    const int want = std::min(15, trunc_two_roundings(q4[j], id4, 8.5f));
    const int got = j < 16 ? b4.qs[j] & 0xF : b4.qs[j - 16] >> 4;
    EXPECT_EQ(got, want) << "Q4_0 x = " << q4[j];
  }

  // Q5_0: extreme -15 -> d = 15/16, q = trunc(x * id + 16.5).
  const float id5 = 1.0f / (-15.0f / -16.0f);
  std::vector<float> q5 = {-15.0f};
  for (float v : fma_boundaries(id5, 16.5f, -14.99f, 14.99f, 31)) q5.push_back(v);
  const std::size_t n5 = q5.size() - 1;
  q5.resize(32, 0.0f);
  EXPECT_GE(n5, 4u) << "too few FMA boundaries for Q5_0";
  BlockQ5_0 b5;
  quantize_row_q5_0(q5.data(), &b5, 32);
  const std::uint32_t qh5 = b5.qh[0] | b5.qh[1] << 8 | b5.qh[2] << 16 | b5.qh[3] << 24;
  for (int j = 0; j < 32; ++j) {
    const int want = std::min(31, trunc_two_roundings(q5[j], id5, 16.5f));
    const int lo = j < 16 ? b5.qs[j] & 0xF : b5.qs[j - 16] >> 4;
    EXPECT_EQ(lo | static_cast<int>((qh5 >> j) & 1) << 4, want) << "Q5_0 x = " << q5[j];
  }

  // Q4_1: min 0 (so x - min is exact), q = trunc(x * id + 0.5). Its boundaries
  // are rarer (a tie after the first rounding, near x * id = 0.5): one per
  // block for these maxima (none for max 3), so several blocks.
  std::size_t n1 = 0;
  for (float mx : {2.7f, 2.2f, 2.6f, 2.8f, 1.3f}) {
    const float id1 = 1.0f / (mx / 15.0f);
    std::vector<float> q1 = {0.0f, mx};
    for (float v : fma_boundaries(id1, 0.5f, 0.001f, mx, 30)) q1.push_back(v);
    n1 += q1.size() - 2;
    q1.resize(32, 1.0f);
    BlockQ4_1 b1;
    quantize_row_q4_1(q1.data(), &b1, 32);
    for (int j = 0; j < 32; ++j) {
      const int want = std::min(15, trunc_two_roundings(q1[j], id1, 0.5f));
      const int got = j < 16 ? b1.qs[j] & 0xF : b1.qs[j - 16] >> 4;
      EXPECT_EQ(got, want) << "Q4_1 max " << mx << " x = " << q1[j];
    }
  }
  EXPECT_GE(n1, 4u) << "too few FMA boundaries for Q4_1";
  std::printf("FMA rounding boundaries: Q4_0 %d, Q5_0 %zu, Q4_1 %zu\n", n4, n5, n1);
}

TEST(QuantizeRef, Q5_0HandComputed) {
  // Extreme x = 8 -> d = 8 / -16 = -0.5; q = trunc(x / d + 16.5), clamped to 31.
  float x[32] = {};
  x[0] = 8.0f;    // -16 + 16.5 -> 0
  x[1] = -8.0f;   // 16 + 16.5 = 32.5 -> clamped to 31 (bit 4 set)
  x[2] = 0.25f;   // -0.5 + 16.5 = 16 -> 16 (bit 4 set, nibble 0)
  x[17] = -1.0f;  // 2 + 16.5 -> 18: high nibble of byte 1 = 2, qh bit 17
  BlockQ5_0 b;
  quantize_row_q5_0(x, &b, 32);
  EXPECT_EQ(fp16_to_f32(b.d), -0.5f);
  const std::uint32_t qh = b.qh[0] | b.qh[1] << 8 | b.qh[2] << 16 | b.qh[3] << 24;
  EXPECT_EQ(b.qs[0] & 0xF, 0);
  EXPECT_EQ(b.qs[1] & 0xF, 15);
  EXPECT_EQ(b.qs[2] & 0xF, 0);
  EXPECT_EQ(b.qs[1] >> 4, 2);
  EXPECT_EQ(qh & 0x7, 0x6u);  // elements 1 and 2 have bit 4
  EXPECT_EQ((qh >> 17) & 1, 1u);
  EXPECT_EQ((qh >> 16) & 1, 1u);  // element 16 is 0 -> q = 16.5 -> 16
}

TEST(QuantizeRef, Q4_1AndQ5_1HandComputed) {
  // min = -1, max = 2: Q4_1 d = 3/15 = 0.2, Q5_1 d = 3/31; q = trunc((x - min)/d + 0.5).
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = 0.5f;
  x[3] = -1.0f;
  x[20] = 2.0f;
  BlockQ4_1 a;
  quantize_row_q4_1(x, &a, 32);
  EXPECT_EQ(a.d, f32_to_fp16(3.0f / 15.0f));
  EXPECT_EQ(a.m, f32_to_fp16(-1.0f));
  EXPECT_EQ(a.qs[3] & 0xF, 0);
  EXPECT_EQ(a.qs[4] >> 4, 15);                                              // element 20
  EXPECT_EQ(a.qs[0] & 0xF, static_cast<int>(1.5f * (1.0f / 0.2f) + 0.5f));  // 8
  BlockQ5_1 b;
  quantize_row_q5_1(x, &b, 32);
  EXPECT_EQ(b.d, f32_to_fp16(3.0f / 31.0f));
  const std::uint32_t qh = b.qh[0] | b.qh[1] << 8 | b.qh[2] << 16 | b.qh[3] << 24;
  EXPECT_EQ(b.qs[4] >> 4, 15);  // 31 = 0x1F
  EXPECT_EQ((qh >> 20) & 1, 1u);
  EXPECT_EQ((qh >> 3) & 1, 0u);
  EXPECT_EQ(b.qs[3] & 0xF, 0);
}

// Decoding a quantized row lands within the format's step of the input:
// half a step for rounding (a whole step where the extreme clamps, for the
// symmetric types), plus the fp16 rounding of d (<= 2^-11 relative, times |q| <= 32)
// and of m.
TEST(QuantizeRef, WeightRoundTripWithinOneStep) {
  std::vector<float> x(32 * 64);
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : x) v = normal(rng) + (rng() % 3 == 0 ? 2.0f : 0.0f);
  const std::int64_t n = static_cast<std::int64_t>(x.size());
  for (TensorType t :
       {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0}) {
    std::vector<char> q(row_size(t, n));
    std::vector<float> y(n);
    quantize_row(t, x.data(), q.data(), n);
    dequantize_row(t, q.data(), y.data(), n);
    const int levels = t == TensorType::Q4_0 || t == TensorType::Q4_1 ? 15
                       : t == TensorType::Q8_0                        ? 254
                                                                      : 31;
    for (std::int64_t b = 0; b < n / 32; ++b) {
      float lo = x[32 * b], hi = x[32 * b];
      for (int j = 0; j < 32; ++j) {
        lo = std::min(lo, x[32 * b + j]);
        hi = std::max(hi, x[32 * b + j]);
      }
      const float amax = std::max(std::fabs(lo), std::fabs(hi));
      const bool asym = t == TensorType::Q4_1 || t == TensorType::Q5_1;
      const float step = asym ? (hi - lo) / levels : 2 * amax / (levels + 1);
      const float tol = (asym ? 0.5f : 1.0f) * step + 32 * step / 2048 + std::fabs(lo) / 2048;
      for (int j = 0; j < 32; ++j) {
        ASSERT_LE(std::fabs(y[32 * b + j] - x[32 * b + j]), tol)
            << type_name(t) << " block " << b << " j " << j;
      }
    }
  }
}

TEST(QuantizeAct, Q8_1CarriesScaledSum) {
  const std::vector<float> x = tricky_values();
  const std::int64_t n = static_cast<std::int64_t>(x.size());
  std::vector<BlockQ8_1> q(n / 32);
  std::vector<BlockQ8_0> r(n / 32);
  quantize_row_q8_1(x.data(), q.data(), n);
  quantize_row_q8_0(x.data(), r.data(), n);
  for (std::size_t b = 0; b < q.size(); ++b) {
    // Same d and quants as Q8_0; s = fp16(d_f32 * sum q).
    EXPECT_EQ(q[b].d, r[b].d) << b;
    EXPECT_EQ(std::memcmp(q[b].qs, r[b].qs, 32), 0) << b;
    int sum = 0;
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) {
      sum += q[b].qs[j];
      amax = std::max(amax, std::fabs(x[32 * b + j]));
    }
    EXPECT_EQ(q[b].s, f32_to_fp16(static_cast<float>(sum) * (amax / 127.0f))) << b;
  }
}

TEST(QuantizeAct, Q8_KRules) {
  std::vector<float> x(512);
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (float& v : x) v = normal(rng);
  x[77] = -9.0f;  // the extreme of block 0 maps to exactly -127
  x[300] = 0.0f;
  BlockQ8_K q[2];
  quantize_row_q8_K(x.data(), q, 512);
  EXPECT_EQ(q[0].d, 1.0f / (-127.0f / -9.0f));
  EXPECT_EQ(q[0].qs[77], -127);
  for (int b = 0; b < 2; ++b) {
    for (int g = 0; g < 16; ++g) {
      int s = 0;
      for (int j = 0; j < 16; ++j) s += q[b].qs[16 * g + j];
      EXPECT_EQ(q[b].bsums[g], s);
    }
    const float iscale = 1.0f / q[b].d;
    for (int j = 0; j < 256; ++j) {
      const float v = iscale * x[256 * b + j];
      // Round half to even, within one step of the scaled value.
      EXPECT_LE(std::fabs(v - q[b].qs[j]), 0.5f + 1e-4f) << b << " " << j;
    }
  }
  // Ties go to even: scaled values 0.5 and 1.5 and 2.5.
  std::vector<float> t(256, 0.0f);
  t[0] = -127.0f;  // iscale = -127 / -127 = 1
  t[1] = 0.5f;
  t[2] = 1.5f;
  t[3] = 2.5f;
  t[4] = -3.5f;
  BlockQ8_K qt;
  quantize_row_q8_K(t.data(), &qt, 256);
  EXPECT_EQ(qt.d, 1.0f);
  EXPECT_EQ(qt.qs[0], -127);
  EXPECT_EQ(qt.qs[1], 0);
  EXPECT_EQ(qt.qs[2], 2);
  EXPECT_EQ(qt.qs[3], 2);
  EXPECT_EQ(qt.qs[4], -4);
  // All-zero blocks give zeros, not NaNs.
  std::vector<float> z(256, 0.0f);
  quantize_row_q8_K(z.data(), &qt, 256);
  EXPECT_EQ(qt.d, 0.0f);
  for (int g = 0; g < 16; ++g) EXPECT_EQ(qt.bsums[g], 0);
}

TEST(QuantizeAct, RoundTripErrorWithinHalfStep) {
  std::vector<float> x(256 * 3);
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : x) v = normal(rng);
  const std::int64_t n = static_cast<std::int64_t>(x.size());
  std::vector<char> q(row_size(TensorType::Q8_0, n));
  std::vector<float> y(n);
  quantize_row_q8_0(x.data(), q.data(), n);
  dequantize_row(TensorType::Q8_0, q.data(), y.data(), n);
  for (std::int64_t b = 0; b < n / 32; ++b) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[32 * b + j]));
    for (int j = 0; j < 32; ++j) {
      EXPECT_LE(std::fabs(y[32 * b + j] - x[32 * b + j]), amax / 254.0f + amax / 2048.0f);
    }
  }
}

TEST(QuantizeAct, UnsupportedTargetIsNamed) {
  float x[256] = {};
  char out[512];
  try {
    quantize_row(TensorType::IQ2_XXS, x, out, 256);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::Unsupported);
    EXPECT_NE(std::string(e.what()).find("IQ2_XXS"), std::string::npos);
  }
}

}  // namespace
}  // namespace seam

namespace seam {
namespace {

// Q8_0 rounds half away from zero (C's roundf) at every half step: with a block
// maximum of 127 the scale is exactly 1, so qs = round(x) for each x.
TEST(QuantizeRef, Q8_0RoundsEveryHalfStepAwayFromZero) {
  for (float start = -127.0f; start < 127.0f; start += 31 * 0.5f) {
    float x[32];
    x[0] = 127.0f;
    for (int j = 1; j < 32; ++j) x[j] = std::min(126.5f, start + 0.5f * static_cast<float>(j));
    quant::BlockQ8_0 b;
    quant::quantize_row_q8_0(x, &b, 32);
    ASSERT_EQ(fp16_to_f32(b.d), 1.0f);
    for (int j = 0; j < 32; ++j) {
      ASSERT_EQ(b.qs[j], static_cast<int>(std::round(x[j]))) << "x " << x[j];
    }
  }
}

}  // namespace
}  // namespace seam
