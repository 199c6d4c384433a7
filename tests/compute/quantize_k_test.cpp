// K-quant weight quantizers: blocks decode (with the exact decoder) to values
// within each type's error bound, on random data and on real weights, and no
// worse than llama-quantize's own output for the same tensor; on the tensor
// llama-quantize wrote, byte for byte the same blocks.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "compute/quant.h"
#include "compute/quant_blocks.h"
#include "compute/quantize_k.h"
#include "seam/error.h"

namespace seam::quant {
namespace {

struct Case {
  TensorType type;
  // Step between levels as a fraction of the block's span: 1/15 for 4-bit
  // levels over [min, max], 1/31 for 5-bit, 1/31.5 for Q6_K's signed levels
  // over [-amax, amax] (span 2*amax).
  double levels;
};

const Case kCases[] = {{TensorType::Q4_K, 15}, {TensorType::Q5_K, 31}, {TensorType::Q6_K, 31.5}};

std::vector<float> roundtrip(TensorType t, const std::vector<float>& x) {
  const auto n = static_cast<std::int64_t>(x.size());
  std::vector<std::byte> q(row_size(t, n));
  quantize_weight_row(t, x.data(), q.data(), n);
  std::vector<float> y(x.size());
  dequantize_row(t, q.data(), y.data(), n);
  return y;
}

// Worst over super-blocks of rms(error) / step, where step = span / levels and
// span is max(x,0) - min(x,0) for the asymmetric types (the offset never goes
// above 0) and 2*max|x| for Q6_K.
double worst_rms_in_steps(const Case& c, const std::vector<float>& x, const std::vector<float>& y) {
  double worst = 0;
  for (std::size_t b = 0; b < x.size(); b += kQK_K) {
    double lo = 0, hi = 0, amax = 0, se = 0;
    for (std::size_t i = b; i < b + kQK_K; ++i) {
      lo = std::min(lo, double(x[i]));
      hi = std::max(hi, double(x[i]));
      amax = std::max(amax, std::fabs(double(x[i])));
      se += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    }
    const double span = c.type == TensorType::Q6_K ? 2 * amax : hi - lo;
    if (span == 0) continue;
    worst = std::max(worst, std::sqrt(se / kQK_K) / (span / c.levels));
  }
  return worst;
}

double rms(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return std::sqrt(s / a.size());
}

// Ideal rounding to a uniform grid has rms error step/sqrt(12) ~= 0.29 step and
// never more than 0.5 step. The sub-block scales are themselves quantized (to 6
// or 8 bits) and a sub-block with a small span gets a step that is a fraction of
// the super-block's, so 0.5 step of the super-block's grid is the bound we hold
// every block to: it fails for a wrong layout (errors of several steps) or a
// bad scale search (errors near a full step).
constexpr double kMaxRmsSteps = 0.5;

TEST(QuantizeK, RandomDataWithinBound) {
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_real_distribution<float> uni(-3.f, 1.f);
  std::vector<float> x(kQK_K * 64);
  for (std::size_t i = 0; i < x.size(); ++i) {
    // Mix of distributions and scales across blocks: gaussian, skewed uniform,
    // all-positive, small magnitudes, one outlier.
    const std::size_t blk = i / kQK_K;
    float v = blk % 4 == 1 ? uni(rng) : normal(rng);
    if (blk % 4 == 2) v = std::fabs(v) + 0.5f;
    if (blk % 4 == 3) v *= 1e-2f;
    x[i] = v * (1.f + float(blk % 7));
  }
  x[kQK_K * 5 + 17] = 40.f;
  for (const Case& c : kCases) {
    const auto y = roundtrip(c.type, x);
    const double w = worst_rms_in_steps(c, x, y);
    std::printf("%s random: worst block rms = %.3f steps\n", type_name(c.type).c_str(), w);
    EXPECT_LT(w, kMaxRmsSteps) << type_name(c.type);
  }
}

// Very small weights: the f16 super-block scale (d ~ amax / 2000) becomes
// subnormal (below 6.1e-5) for weights under ~0.1, and for weights near 1e-4
// it keeps only a few significant bits, so the relative precision drops and the error in steps
// grows (llama.cpp's format has the same limit). The output must still be sane: under one step rms.
TEST(QuantizeK, TinyWeightsStayWithinAStep) {
  std::mt19937 rng(99);
  std::normal_distribution<float> normal(0.f, 1e-4f);
  std::vector<float> x(kQK_K * 16);
  for (float& v : x) v = normal(rng);
  for (const Case& c : kCases) {
    const double w = worst_rms_in_steps(c, x, roundtrip(c.type, x));
    std::printf("%s tiny: worst block rms = %.3f steps\n", type_name(c.type).c_str(), w);
    EXPECT_LT(w, 1.0) << type_name(c.type);
  }
}

TEST(QuantizeK, ZerosAndConstants) {
  for (const Case& c : kCases) {
    std::vector<float> zeros(kQK_K, 0.f);
    const auto y0 = roundtrip(c.type, zeros);
    for (float v : y0) EXPECT_EQ(v, 0.f) << type_name(c.type);
    std::vector<float> constant(kQK_K, 0.75f);
    const auto y1 = roundtrip(c.type, constant);
    for (float v : y1) EXPECT_NEAR(v, 0.75f, 0.75f / 50) << type_name(c.type);
  }
}

TEST(QuantizeK, RejectsRowsThatAreNotWholeSuperBlocks) {
  std::vector<float> x(300, 1.f);
  std::vector<std::byte> q(2 * sizeof(BlockQ6_K));
  for (const Case& c : kCases) {
    EXPECT_THROW(quantize_weight_row(c.type, x.data(), q.data(), 300), Error);
  }
  EXPECT_THROW(quantize_weight_row(TensorType::IQ2_XS, x.data(), q.data(), 256), Error);
}

std::vector<float> read_f32(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), {});
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

// Real weights: blk.0.attn_q.weight of the quant reference model as its F16
// file holds it, and llama-quantize's Q4_K/Q5_K/Q6_K of the same tensor (decoded
// by llama.cpp). Our error against the F16 values must be within the bound and
// within 5% of llama-quantize's (which had the F32 original; the F16 rounding is
// ~1e-3 of a step, so it does not matter here).
TEST(QuantizeK, RealWeightsMatchLlamaQuantizeQuality) {
  const std::string dir = std::string(SEAM_SHARED_DIR) + "/models/quant/dequant/";
  const auto x = read_f32(dir + "f16.blk.0.attn_q.weight.f32");
  ASSERT_EQ(x.size(), 512u * 512u);
  const char* names[] = {"q4_k", "q5_k", "q6_k"};
  for (int i = 0; i < 3; ++i) {
    const Case& c = kCases[i];
    const auto ours = roundtrip(c.type, x);
    const auto theirs = read_f32(dir + names[i] + ".blk.0.attn_q.weight.f32");
    ASSERT_EQ(theirs.size(), x.size());
    const double e_ours = rms(x, ours), e_theirs = rms(x, theirs);
    std::printf("%s real: rms ours %.6g, llama-quantize %.6g, worst block %.3f steps\n",
                type_name(c.type).c_str(), e_ours, e_theirs, worst_rms_in_steps(c, x, ours));
    EXPECT_LT(worst_rms_in_steps(c, x, ours), kMaxRmsSteps);
    EXPECT_LE(e_ours, e_theirs * 1.05) << type_name(c.type);
  }
}

// Requantizing decoded K-quant values to the same type lands on (nearly) the
// same grid again: error must be far below a fresh quantization's.
TEST(QuantizeK, RequantizingDecodedWeightsIsStable) {
  const std::string dir = std::string(SEAM_SHARED_DIR) + "/models/quant/dequant/";
  const auto src = read_f32(dir + "f16.blk.0.attn_q.weight.f32");
  for (const Case& c : kCases) {
    const auto once = roundtrip(c.type, src);
    const auto twice = roundtrip(c.type, once);
    EXPECT_LT(rms(once, twice), 0.5 * rms(src, once)) << type_name(c.type);
  }
}

}  // namespace
}  // namespace seam::quant

namespace seam::quant {
namespace {

// The quant reference model's blk.0.attn_q.weight regenerated in F32 (its
// README: PCG64 seeded (0, crc32(name)), float32 standard normal * 0.03) so
// that our blocks can be compared with llama-quantize's own bytes.
// One file per process: ctest runs the two users of this tensor in parallel,
// and a fresh build has no scratch directory yet.
std::vector<float> regenerate_reference_attn_q() {
  const std::filesystem::path dir = std::filesystem::path(SEAM_SCRATCH_DIR) / "quantize_k";
  std::filesystem::create_directories(dir);
  const std::string out = (dir / ("ref512_attn_q." + std::to_string(::getpid()) + ".f32")).string();
  const std::string cmd = std::string(SEAM_PYTHON) +
                          " -c \"import zlib, numpy as np; "
                          "n = 'blk.0.attn_q.weight'; "
                          "g = np.random.Generator(np.random.PCG64([0, zlib.crc32(n.encode())])); "
                          "(g.standard_normal((512, 512), dtype=np.float32) * np.float32(0.03))"
                          ".tofile('" +
                          out + "')\"";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto x = read_f32(out);
  std::filesystem::remove(out);
  return x;
}

TEST(QuantizeK, BlocksAgainstLlamaQuantizeBytes) {
  const auto x = regenerate_reference_attn_q();
  ASSERT_EQ(x.size(), 512u * 512u);
  const std::string dir = std::string(SEAM_SHARED_DIR) + "/models/quant/dequant/";
  // The regeneration is right when the F16 dump matches it.
  const auto f16 = read_f32(dir + "f16.blk.0.attn_q.weight.f32");
  ASSERT_EQ(f16.size(), x.size());
  for (std::size_t i = 0; i < x.size(); i += 997) {
    ASSERT_NEAR(f16[i], x[i], 1e-4) << i;
  }
  const std::pair<TensorType, const char*> cases[] = {
      {TensorType::Q4_K, "q4_k"}, {TensorType::Q5_K, "q5_k"}, {TensorType::Q6_K, "q6_k"}};
  for (const auto& [type, key] : cases) {
    std::ifstream f(dir + key + ".blk.0.attn_q.weight.raw", std::ios::binary);
    const std::vector<char> ref((std::istreambuf_iterator<char>(f)), {});
    const std::size_t bs = row_size(type, kQK_K);
    ASSERT_EQ(ref.size(), x.size() / kQK_K * bs);
    std::vector<std::byte> ours(ref.size());
    quantize_weight_row(type, x.data(), ours.data(), static_cast<std::int64_t>(x.size()));
    std::size_t same = 0, n = ref.size() / bs;
    for (std::size_t b = 0; b < n; ++b)
      same += std::memcmp(ref.data() + b * bs, ours.data() + b * bs, bs) == 0;
    std::printf("%s: %zu of %zu blocks byte-identical to llama-quantize\n", type_name(type).c_str(),
                same, n);
    EXPECT_EQ(same, n) << type_name(type);
  }
}

}  // namespace
}  // namespace seam::quant

namespace seam::quant {
namespace {

// Q2_K and Q3_K: the low-bit K-quants of llama.cpp's Q2_K and Q3_K_* mixes.
// Their step: Q2_K's four levels over [min(x,0), max(x,0)] (span/3); Q3_K's
// eight signed levels at scale ~amax/4 (span 2*amax over 8 steps).
const Case kLowBitCases[] = {{TensorType::Q2_K, 3}, {TensorType::Q3_K, 8}};

double worst_low_bit_steps(const Case& c, const std::vector<float>& x,
                           const std::vector<float>& y) {
  // worst_rms_in_steps treats only Q6_K as symmetric; Q3_K is too.
  if (c.type != TensorType::Q3_K) return worst_rms_in_steps(c, x, y);
  return worst_rms_in_steps({TensorType::Q6_K, c.levels}, x, y);
}

TEST(QuantizeLowBitK, BlocksAgainstLlamaQuantizeBytes) {
  const auto x = regenerate_reference_attn_q();
  ASSERT_EQ(x.size(), 512u * 512u);
  const std::string dir = std::string(SEAM_SHARED_DIR) + "/models/quant/dequant/";
  for (const auto& [type, key] :
       {std::pair{TensorType::Q2_K, "q2_k"}, std::pair{TensorType::Q3_K, "q3_k"}}) {
    std::ifstream f(dir + key + ".blk.0.attn_q.weight.raw", std::ios::binary);
    const std::vector<char> ref((std::istreambuf_iterator<char>(f)), {});
    const std::size_t bs = row_size(type, kQK_K);
    ASSERT_EQ(ref.size(), x.size() / kQK_K * bs) << key;
    std::vector<std::byte> ours(ref.size());
    quantize_weight_row(type, x.data(), ours.data(), static_cast<std::int64_t>(x.size()));
    std::size_t same = 0, n = ref.size() / bs;
    for (std::size_t b = 0; b < n; ++b)
      same += std::memcmp(ref.data() + b * bs, ours.data() + b * bs, bs) == 0;
    std::printf("%s: %zu of %zu blocks byte-identical to llama-quantize\n", key, same, n);
    EXPECT_EQ(same, n) << key;
  }
}

// Round trips: within 0.5 step rms per block on random data (ideal rounding is
// 0.29), and on real weights no worse than llama-quantize's own (decoded by llama.cpp).
TEST(QuantizeLowBitK, RoundTripErrorBounds) {
  std::mt19937 rng(4321);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> x(kQK_K * 64);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t blk = i / kQK_K;
    float v = normal(rng);
    if (blk % 3 == 1) v = std::fabs(v) + 0.5f;
    x[i] = v * (1.f + float(blk % 5));
  }
  const std::string dir = std::string(SEAM_SHARED_DIR) + "/models/quant/dequant/";
  const auto real = read_f32(dir + "f16.blk.0.attn_q.weight.f32");
  const char* keys[] = {"q2_k", "q3_k"};
  for (int i = 0; i < 2; ++i) {
    const Case& c = kLowBitCases[i];
    const double w = worst_low_bit_steps(c, x, roundtrip(c.type, x));
    const auto ours = roundtrip(c.type, real);
    const auto theirs = read_f32(dir + keys[i] + ".blk.0.attn_q.weight.f32");
    ASSERT_EQ(theirs.size(), real.size());
    std::printf("%s: random worst block %.3f steps; real rms ours %.6g, llama-quantize %.6g\n",
                keys[i], w, rms(real, ours), rms(real, theirs));
    EXPECT_LT(w, kMaxRmsSteps) << keys[i];
    EXPECT_LE(rms(real, ours), rms(real, theirs) * 1.05) << keys[i];
    // Zeros stay zeros.
    const std::vector<float> zeros(kQK_K, 0.f);
    for (float v : roundtrip(c.type, zeros)) EXPECT_EQ(v, 0.f) << keys[i];
  }
}

}  // namespace
}  // namespace seam::quant

namespace seam::quant {
namespace {

// IQ4_NL and IQ4_XS: codes from a fixed non-uniform codebook (kIQ4Values, -127..113)
// times a block scale ~amax/127. The largest gap between codes is 23 (104 - 127 and
// 113 - 89 at the ends are 23 and 24), so a value is at most 12 code units from its
// code, and rms error over a block must stay below 12 * amax/127; on gaussian data
// the dense middle of the codebook makes it far smaller. llama-quantize's IQ4
// blocks are not in shared/ to compare bytes with, so the check is the bound and
// the quality against Q4_0 (same size as IQ4_NL), which the codebook must not lose to.
TEST(QuantizeIq4, RoundTripErrorBounds) {
  std::mt19937 rng(77);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> x(kQK_K * 32);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = normal(rng) * (1.f + float(i / kQK_K % 4));
  x[kQK_K * 3 + 5] = 30.f;  // an outlier
  const auto q40 = roundtrip(TensorType::Q4_0, x);
  for (TensorType t : {TensorType::IQ4_NL, TensorType::IQ4_XS}) {
    const auto y = roundtrip(t, x);
    double worst = 0;
    for (std::size_t b = 0; b < x.size(); b += 32) {
      double amax = 0, se = 0;
      for (std::size_t i = b; i < b + 32; ++i) {
        amax = std::max(amax, std::fabs(double(x[i])));
        se += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
      }
      worst = std::max(worst, std::sqrt(se / 32) / (amax / 127));
    }
    std::printf("%s: rms %.5f (Q4_0 %.5f), worst block %.2f code units\n", type_name(t).c_str(),
                rms(x, y), rms(x, q40), worst);
    EXPECT_LT(worst, 12.0) << type_name(t);
    EXPECT_LT(rms(x, y), rms(x, q40)) << type_name(t);
    const std::vector<float> zeros(kQK_K, 0.f);
    for (float v : roundtrip(t, zeros)) EXPECT_EQ(v, 0.f) << type_name(t);
  }
  std::vector<float> odd(kQK_K + 32, 1.f);
  std::vector<std::byte> q(row_size(TensorType::IQ4_XS, 2 * kQK_K));
  EXPECT_THROW(quantize_weight_row(TensorType::IQ4_XS, odd.data(), q.data(), kQK_K + 32), Error);
  EXPECT_THROW(quantize_weight_row(TensorType::IQ4_NL, odd.data(), q.data(), 33), Error);
}

}  // namespace
}  // namespace seam::quant
