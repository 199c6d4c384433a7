// Every CPU level's dot kernels against the scalar reference, on random blocks
// of every type; levels this CPU lacks are skipped (named in the skip message).
#include "compute/dot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "compute/quant.h"
#include "quant_testutil.h"
#include "seam/cpu.h"
#include "seam/error.h"

namespace seam {
namespace {

class DotTypes : public ::testing::TestWithParam<std::tuple<TensorType, CpuLevel>> {};

// The integer sums are exact in both kernels; they differ only in the order in
// which per-block f32 terms are accumulated (and in FMA use). Each of the ~n/32
// additions rounds by <= 2^-24 of a partial sum bounded by sum|terms|, so
// 1e-5 * sum|terms| (terms include the separately accumulated min parts) is a
// safe bound for these row lengths (<= 40 blocks: 1e-5 > 40 * 2^-24).
TEST_P(DotTypes, LevelMatchesScalar) {
  const auto [type, level] = GetParam();
  if (level > detected_cpu_level()) {
    GTEST_SKIP() << "this CPU runs up to " << cpu_level_name(detected_cpu_level()) << ", not "
                 << cpu_level_name(level);
  }
  const dot::Kernels* k = &quant::traits(type)->dot;
  const dot::DotFn fast = k->at(level);
  const TensorType dt = quant::traits(type)->dot_type;
  std::mt19937 rng(99 + static_cast<int>(type));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  // 37 blocks of 32: the AVX-512 kernels take scales 16 blocks at a time and
  // blocks in pairs, so this crosses two full groups and ends on an odd block.
  const std::int64_t long_row = quant::traits(type)->block_size == 32 ? 37 * 32 : 0;
  for (std::int64_t n :
       {testutil::test_row_len(type), 4 * testutil::test_row_len(type) / 3, long_row}) {
    if (n == 0) continue;
    if (n % quant::traits(type)->block_size) continue;
    const std::size_t row = quant::row_size(type, n);
    const std::size_t arow = dt == TensorType::F32 ? n * 4 : quant::row_size(dt, n);
    for (int rep = 0; rep < 20; ++rep) {
      const std::vector<std::byte> w = testutil::random_weights(type, 1, n, row, rng);
      std::vector<float> wf(n);
      quant::dequantize_row(type, w.data(), wf.data(), n);
      const std::vector<double> mins = testutil::min_terms(type, w.data(), n);
      const int n_act = 1 + rep % 11;  // crosses both levels' register tiles (4, 8)
      std::vector<std::byte> act(arow * n_act);
      std::vector<float> x(n);
      for (int t = 0; t < n_act; ++t) {
        // Every few reps, activations with a huge outlier push quants to +-127.
        for (float& v : x) v = normal(rng) * (rep % 4 == 3 ? 100.0f : 1.0f);
        if (rep % 5 == 4) x[t % n] = -1e4f;
        quant::quantize_row(dt, x.data(), act.data() + t * arow, n);
      }
      std::vector<float> ref(n_act * 3, -1.0f), got(n_act * 3, -1.0f);
      k->scalar(n, w.data(), act.data(), arow, n_act, ref.data(), 3);
      fast(n, w.data(), act.data(), arow, n_act, got.data(), 3);
      for (int t = 0; t < n_act; ++t) {
        const std::vector<double> a = testutil::decode_act(dt, act.data() + t * arow, n);
        double mag = 0;
        for (std::int64_t i = 0; i < n; ++i)
          mag += (std::fabs(wf[i]) + 2 * mins[i]) * std::fabs(a[i]);
        EXPECT_NEAR(got[3 * t], ref[3 * t], 1e-5 * mag + 1e-30)
            << quant::type_name(type) << " n " << n << " rep " << rep << " t " << t;
        EXPECT_EQ(got[3 * t + 1], -1.0f);  // the stride is respected
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, DotTypes,
                         ::testing::Combine(::testing::ValuesIn(testutil::kernel_types()),
                                            ::testing::Values(CpuLevel::Scalar, CpuLevel::Avx2,
                                                              CpuLevel::Avx512)),
                         [](const auto& info) {
                           return quant::type_name(std::get<0>(info.param)) + "_" +
                                  cpu_level_name(std::get<1>(info.param));
                         });

// The prefill GEMMs of each level (packed panels, prepared activations)
// against the scalar dot kernel on the same quantized activations: every token
// count up to 36 (AVX-512 tiles of 8, AVX2 int tiles of 4, AVX2 float tiles of
// 6, AMX tiles of 16: every remainder), full and partial panels (7 rows: a partial
// first half; 1 row). Same bound as above: both sums are exact in integers and
// differ only in f32 rounding.
// Packs panels of `type` with g and runs them on 1..36 tokens; every output
// must lie within the bound above of the scalar dot kernel, widened by the
// relative error g's prepared activations carry (GemmFns::act_rel_error).
void check_gemm(TensorType type, const dot::GemmFns& g, const std::string& what) {
  const quant::TypeTraits& tr = *quant::traits(type);
  const TensorType dt = tr.dot_type;
  std::mt19937 rng(7 + static_cast<int>(type));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::int64_t n = testutil::test_row_len(type);
  const std::size_t row = quant::row_size(type, n);
  const std::size_t arow = dt == TensorType::F32 ? n * 4 : quant::row_size(dt, n);
  constexpr int kTok = 36;
  std::vector<std::byte> act(arow * kTok), prepared(g.act_bytes(n) * kTok);
  std::vector<float> x(n);
  for (int t = 0; t < kTok; ++t) {
    for (float& v : x) v = normal(rng) * (t % 3 == 2 ? 50.0f : 1.0f);
    quant::quantize_row(dt, x.data(), act.data() + t * arow, n);
    g.prepare(n, act.data() + t * arow, prepared.data() + t * g.act_bytes(n));
  }
  std::vector<std::byte> panel(g.panel_bytes(n));
  for (int n_rows : {dot::kPanelRows, 11, 7, 1}) {
    const std::vector<std::byte> w = testutil::random_weights(type, n_rows, n, row, rng);
    g.pack(n, w.data(), row, n_rows, panel.data());
    for (int n_tok = 1; n_tok <= kTok; ++n_tok) {
      const std::size_t ldy = dot::kPanelRows + 3;
      std::vector<float> got(ldy * n_tok, -1.0f);
      g.run(n, panel.data(), prepared.data(), n_tok, n_rows, got.data(), ldy);
      for (int r = 0; r < n_rows; ++r) {
        std::vector<float> ref(n_tok);
        tr.dot.scalar(n, w.data() + r * row, act.data(), arow, n_tok, ref.data(), 1);
        std::vector<float> wf(n);
        quant::dequantize_row(type, w.data() + r * row, wf.data(), n);
        const std::vector<double> mins = testutil::min_terms(type, w.data() + r * row, n);
        for (int t = 0; t < n_tok; ++t) {
          const std::vector<double> a = testutil::decode_act(dt, act.data() + t * arow, n);
          double mag = 0;
          for (std::int64_t i = 0; i < n; ++i)
            mag += (std::fabs(wf[i]) + 2 * mins[i]) * std::fabs(a[i]);
          ASSERT_NEAR(got[t * ldy + r], ref[t], (1e-5 + g.act_rel_error) * mag + 1e-30)
              << what << " " << quant::type_name(type) << " rows " << n_rows << " n_tok " << n_tok
              << " r " << r << " t " << t;
        }
      }
      for (int t = 0; t < n_tok; ++t) {
        for (std::size_t r = n_rows; r < ldy; ++r) ASSERT_EQ(got[t * ldy + r], -1.0f);
      }
    }
  }
}

// The prefill GEMMs of each level (packed panels, prepared activations)
// against the scalar dot kernel on the same quantized activations: every token
// count up to 36 (AVX-512 tiles of 8 or 12, AVX2 int tiles of 4, AVX2 float
// tiles of 6, AMX tiles of 16: every remainder), full and partial panels (7
// rows: a partial first half; 1 row). Same bound as above: both sums are exact
// in integers and differ only in f32 rounding.
class DotGemm : public ::testing::TestWithParam<CpuLevel> {};

TEST_P(DotGemm, PanelsMatchScalarRows) {
  const CpuLevel level = GetParam();
  if (detected_cpu_level() < level) {
    GTEST_SKIP() << "this CPU runs up to " << cpu_level_name(detected_cpu_level());
  }
  int checked = 0;
  for (TensorType type : testutil::kernel_types()) {
    const quant::TypeTraits& tr = *quant::traits(type);
    const dot::GemmFns* g = level == CpuLevel::Amx      ? tr.dot.gemm_amx
                            : level == CpuLevel::Avx512 ? tr.dot.gemm512
                                                        : tr.dot.gemm2;
    if (!g) continue;
    ++checked;
    check_gemm(type, *g, cpu_level_name(level));
  }
  // AVX-512 and AVX2: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K,
  // IQ4_XS, F32, F16, BF16; AMX: Q4_0, Q5_0, Q8_0, IQ4_NL, Q4_K, Q6_K.
  EXPECT_GE(checked, level == CpuLevel::Amx ? 6 : 15);
}

// Both AVX-512 BF16 GEMMs: the table's
// f32 FMA one (exact activations) and, where the CPU has AVX512_BF16, the
// vdpbf16ps one on activations rounded to bf16 (bound widened by 2^-9 * sum|w*a|).
TEST(DotGemmBf16, BothAvx512VariantsMatchScalar) {
  if (detected_cpu_level() < CpuLevel::Avx512) {
    GTEST_SKIP() << "this CPU runs up to " << cpu_level_name(detected_cpu_level());
  }
  EXPECT_EQ(dot::avx512::gemm_bf16.act_rel_error, 0.0);
  check_gemm(TensorType::BF16, dot::avx512::gemm_bf16, "avx512 fma");
  if (!cpu_has_avx512_bf16()) GTEST_SKIP() << "this CPU has no AVX512_BF16 (vdpbf16ps)";
  EXPECT_EQ(dot::avx512::gemm_bf16_dp.act_rel_error, 1.0 / 512);
  check_gemm(TensorType::BF16, dot::avx512::gemm_bf16_dp, "avx512 vdpbf16ps");
}

// The AVX-512 decode kernels on prepared activation rows (dot.h RowFns) against
// the scalar kernel on the plain quantized rows: even and odd block counts
// (the kernels pair blocks), one to three 16-block scale groups, 1..11 tokens
// (crossing the 8-token register tile), activations with outliers at +-127. Same
// bound as above: integer sums are exact, only f32 accumulation order differs.
TEST(DotRows, PreparedRowsMatchScalar) {
  if (detected_cpu_level() < CpuLevel::Avx512) {
    GTEST_SKIP() << "this CPU runs up to " << cpu_level_name(detected_cpu_level());
  }
  int checked = 0;
  for (TensorType type : testutil::kernel_types()) {
    const quant::TypeTraits& tr = *quant::traits(type);
    const dot::RowFns* rf = tr.dot.rows512;
    if (!rf) continue;
    ++checked;
    const TensorType dt = tr.dot_type;
    std::mt19937 rng(11 + static_cast<int>(type));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (std::int64_t n : {32, 64, 7 * 32, 16 * 32, 37 * 32}) {
      const std::size_t row = quant::row_size(type, n);
      const std::size_t arow = quant::row_size(dt, n);
      const std::size_t prow = rf->act_bytes(n);
      for (int rep = 0; rep < 8; ++rep) {
        const int n_act = 1 + (3 * rep) % 11;  // 1..11: crosses the 8-token tile
        const std::vector<std::byte> w = testutil::random_weights(type, 1, n, row, rng);
        std::vector<float> wf(n);
        quant::dequantize_row(type, w.data(), wf.data(), n);
        std::vector<std::byte> act(arow * n_act), prepared(prow * n_act);
        std::vector<float> x(n);
        for (int t = 0; t < n_act; ++t) {
          for (float& v : x) v = normal(rng) * (rep % 4 == 3 ? 100.0f : 1.0f);
          if (rep % 3 == 2) x[(7 * t) % n] = -1e4f;
          quant::quantize_row(dt, x.data(), act.data() + t * arow, n);
          rf->prepare(n, act.data() + t * arow, prepared.data() + t * prow);
        }
        std::vector<float> ref(n_act * 2, -1.0f), got(n_act * 2, -1.0f);
        tr.dot.scalar(n, w.data(), act.data(), arow, n_act, ref.data(), 2);
        rf->dot(n, w.data(), prepared.data(), prow, n_act, got.data(), 2);
        for (int t = 0; t < n_act; ++t) {
          const std::vector<double> a = testutil::decode_act(dt, act.data() + t * arow, n);
          double mag = 0;
          for (std::int64_t i = 0; i < n; ++i) mag += std::fabs(wf[i]) * std::fabs(a[i]);
          EXPECT_NEAR(got[2 * t], ref[2 * t], 1e-5 * mag + 1e-30)
              << quant::type_name(type) << " n " << n << " rep " << rep << " t " << t;
          EXPECT_EQ(got[2 * t + 1], -1.0f);  // the stride is respected
          // A token's value is the same bits in any tile of tokens.
          float alone = 0;
          rf->dot(n, w.data(), prepared.data() + t * prow, prow, 1, &alone, 1);
          EXPECT_EQ(got[2 * t], alone) << quant::type_name(type) << " n " << n << " t " << t;
        }
      }
    }
  }
  EXPECT_GE(checked, 4);  // Q4_0, Q5_0, Q8_0, IQ4_NL (and F32, F16, BF16 at AVX-512)
}

// The multi-row decode kernels (dot.h MultiRowFn) of one level: their rows
// (kDecodeRows, or for the float types FloatRows' long_count /
// kShortRowRows), packed and with a gap between them, against one token, each row
// against the scalar kernel with the bound above, and bit-equal to the level's
// one-row kernel (the same sums in the same order, so a row's value does not
// depend on which kernel the thread split gave it to); nothing past out[rows).
// `prepare` (null: none) turns the quantized token into what the kernels read.
void check_multi_row(CpuLevel level) {
  if (detected_cpu_level() < level) {
    GTEST_SKIP() << "this CPU runs up to " << cpu_level_name(detected_cpu_level());
  }
  struct Kernel {
    dot::MultiRowFn multi;
    dot::DotFn one_row;
    int rows;
  };
  int checked = 0;
  for (TensorType type : testutil::kernel_types()) {
    const quant::TypeTraits& tr = *quant::traits(type);
    const dot::RowFns* rf = level == CpuLevel::Avx512 ? tr.dot.rows512 : nullptr;
    // The float types' kernels read the plain activations.
    const dot::Kernels::FloatRows& fr =
        level == CpuLevel::Avx512 ? tr.dot.float_rows512 : tr.dot.float_rows2;
    const bool floats = !rf && fr.short_rows;
    const dot::DotFn one_row = tr.dot.at(level);
    std::vector<Kernel> kernels;
    if (rf) {
      kernels.push_back({rf->dot_rows, rf->dot, dot::kDecodeRows});
    } else if (floats) {
      kernels.push_back({fr.long_rows, one_row, fr.long_count});
      kernels.push_back({fr.short_rows, one_row, dot::kShortRowRows});
    } else if (tr.dot.rows2) {
      kernels.push_back({tr.dot.rows2, tr.dot.avx2, dot::kDecodeRows});
    }
    const TensorType dt = tr.dot_type;
    std::mt19937 rng(23 + static_cast<int>(type));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<std::int64_t> lengths = {32, 64, 7 * 32, 16 * 32, 18 * 32, 37 * 32};
    if (floats) lengths.push_back(dot::kLongRow + 21);  // a masked tail
    for (const Kernel& k : kernels) {
      ASSERT_NE(k.multi, nullptr) << quant::type_name(type);
      ++checked;
      const int R = k.rows;
      for (std::int64_t n : lengths) {
        const std::size_t row = quant::row_size(type, n);
        for (std::size_t stride : {row, row + 64}) {  // a gap that keeps F32 rows aligned
          for (int rep = 0; rep < 4; ++rep) {
            std::vector<std::byte> w(stride * R);
            for (int r = 0; r < R; ++r) {
              const std::vector<std::byte> wr = testutil::random_weights(type, 1, n, row, rng);
              std::copy(wr.begin(), wr.end(), w.begin() + static_cast<std::ptrdiff_t>(r * stride));
            }
            std::vector<float> x(n);
            for (float& v : x) v = normal(rng) * (rep == 3 ? 100.0f : 1.0f);
            if (rep == 2) x[5 % n] = -1e4f;
            std::vector<std::byte> act(quant::row_size(dt, n));
            quant::quantize_row(dt, x.data(), act.data(), n);
            std::vector<std::byte> token = act;
            if (rf) {
              token.resize(rf->act_bytes(n));
              rf->prepare(n, act.data(), token.data());
            }
            std::vector<float> got(R + 1, -1.0f);
            k.multi(n, w.data(), stride, token.data(), got.data());
            const std::vector<double> a = testutil::decode_act(dt, act.data(), n);
            std::vector<float> wf(n);
            for (int r = 0; r < R; ++r) {
              const std::byte* wr = w.data() + r * stride;
              float ref = 0;
              tr.dot.scalar(n, wr, act.data(), act.size(), 1, &ref, 1);
              quant::dequantize_row(type, wr, wf.data(), n);
              double mag = 0;
              for (std::int64_t i = 0; i < n; ++i) mag += std::fabs(wf[i]) * std::fabs(a[i]);
              EXPECT_NEAR(got[r], ref, 1e-5 * mag + 1e-30)
                  << quant::type_name(type) << " n " << n << " stride " << stride << " row " << r;
              float one = 0;
              k.one_row(n, wr, token.data(), token.size(), 1, &one, 1);
              EXPECT_EQ(got[r], one)
                  << quant::type_name(type) << " " << R << " rows, n " << n << " row " << r;
            }
            EXPECT_EQ(got[R], -1.0f);
          }
        }
      }
    }
  }
  // Q4_0, Q5_0, Q8_0, IQ4_NL, and the long and short float rows of F32, F16, BF16.
  EXPECT_GE(checked, 10);
}

TEST(DotRows, MultiRowDecodeMatchesScalarAvx512) { check_multi_row(CpuLevel::Avx512); }
TEST(DotRows, MultiRowDecodeMatchesScalarAvx2) { check_multi_row(CpuLevel::Avx2); }

INSTANTIATE_TEST_SUITE_P(Levels, DotGemm,
                         ::testing::Values(CpuLevel::Avx2, CpuLevel::Avx512, CpuLevel::Amx),
                         [](const auto& info) { return cpu_level_name(info.param); });

// Every type has a kernel at every level (a level without its own runs the one below).
TEST(Dot, EveryLevelHasAKernelForEveryType) {
  for (TensorType t : testutil::kernel_types()) {
    const dot::Kernels& k = quant::traits(t)->dot;
    EXPECT_EQ(k.at(CpuLevel::Scalar), k.scalar) << quant::type_name(t);
    EXPECT_NE(k.avx2, nullptr) << quant::type_name(t);
    EXPECT_EQ(k.at(CpuLevel::Avx2), k.avx2) << quant::type_name(t);
    EXPECT_EQ(k.at(CpuLevel::Avx512), k.avx512 ? k.avx512 : k.avx2) << quant::type_name(t);
  }
}

TEST(CpuLevel, NamesRoundTrip) {
  for (CpuLevel l : {CpuLevel::Scalar, CpuLevel::Avx2, CpuLevel::Avx512, CpuLevel::Amx}) {
    EXPECT_EQ(parse_cpu_level(cpu_level_name(l)), l);
  }
  EXPECT_EQ(parse_cpu_level("AVX2"), std::nullopt);
  EXPECT_EQ(parse_cpu_level(""), std::nullopt);
}

// SEAM_CPU: unset picks the detected level; a lower one is honoured; a higher or
// unknown one is refused with a message naming what the CPU supports.
TEST(CpuLevel, ChoiceHonoursAndRefusesSeamCpu) {
  EXPECT_EQ(choose_cpu_level(nullptr, CpuLevel::Avx2), CpuLevel::Avx2);
  EXPECT_EQ(choose_cpu_level("", CpuLevel::Avx512), CpuLevel::Avx512);
  EXPECT_EQ(choose_cpu_level(nullptr, CpuLevel::Amx), CpuLevel::Avx512);  // AMX is opt-in
  EXPECT_EQ(choose_cpu_level("scalar", CpuLevel::Avx512), CpuLevel::Scalar);
  EXPECT_EQ(choose_cpu_level("avx2", CpuLevel::Avx512), CpuLevel::Avx2);
  EXPECT_EQ(choose_cpu_level("avx512", CpuLevel::Avx512), CpuLevel::Avx512);
  EXPECT_EQ(choose_cpu_level("avx512", CpuLevel::Amx), CpuLevel::Avx512);
  EXPECT_EQ(choose_cpu_level("amx", CpuLevel::Amx), CpuLevel::Amx);
  for (const char* bad : {"avx512", "amx", "sse4"}) {
    try {
      choose_cpu_level(bad, CpuLevel::Avx2);
      FAIL() << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::InvalidArgument);
      const std::string msg = e.what();
      EXPECT_NE(msg.find(bad), std::string::npos) << msg;
      EXPECT_NE(msg.find("avx2"), std::string::npos) << msg;  // what the CPU supports
    }
  }
}

// The public name is the active level, which never exceeds what the CPU has.
TEST(CpuLevel, ActiveLevelIsSupported) {
  EXPECT_LE(active_cpu_level(), detected_cpu_level());
  EXPECT_EQ(parse_cpu_level(seam::cpu_level()), active_cpu_level());
}

}  // namespace
}  // namespace seam
