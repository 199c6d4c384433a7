// The 32-element block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4), the K-quants
// (Q2_K to Q6_K) and IQ4_XS interleaved 16 rows at a time
// (compute/interleave.h) are the same matrix: the layout round-trips, and every
// operation on an interleaved view gives what it gives on the rows, at every
// CPU level this machine runs.
#include "compute/interleave.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "compute/matmul.h"
#include "compute/quant.h"
#include "quant_testutil.h"
#include "seam/error.h"

namespace seam {
namespace {

struct Interleaved {
  std::vector<std::byte> rows, groups;
  WeightView w, w16;
};

Interleaved make(TensorType type, std::int64_t n_in, std::int64_t n_out, std::mt19937& rng) {
  Interleaved m;
  const std::size_t row = quant::row_size(type, n_in);
  m.rows = testutil::random_weights(type, n_out, n_in, row, rng);
  m.groups = m.rows;
  interleave::pack_in_place(type, n_in, n_out, m.groups.data());
  m.w = {type, n_in, n_out, m.rows.data(), row};
  m.w16 = m.w;
  m.w16.data = m.groups.data();
  m.w16.interleaved16 = true;
  return m;
}

// Elements per block of `type` (32, or 256 for the K-quants).
std::int64_t block_len(TensorType type) { return quant::traits(type)->block_size; }

class Interleave : public ::testing::TestWithParam<TensorType> {};

TEST_P(Interleave, RoundTripsAndGetRowReadsIt) {
  std::mt19937 rng(5);
  const std::int64_t n = 3 * block_len(GetParam());
  const Interleaved m = make(GetParam(), n, 32, rng);
  EXPECT_NE(m.rows, m.groups);
  std::vector<std::byte> back(m.rows.size());
  const std::size_t group = 16 * m.w.row_stride;
  for (std::size_t g = 0; g < 2; ++g)
    interleave::unpack(GetParam(), n, m.groups.data() + g * group, back.data() + g * group);
  EXPECT_EQ(back, m.rows);
  std::vector<float> a(n), b(n);
  for (std::int64_t r = 0; r < 32; ++r) {
    get_row(m.w, r, a.data());
    get_row(m.w16, r, b.data());
    ASSERT_EQ(a, b) << "row " << r;
  }
}

// Levels without an interleaved kernel unpack a group and run their own
// kernels, and the GEMM panels are the same bytes from either layout: those
// outputs are equal. The AVX2 and AVX-512 decode kernels on the groups sum
// each block's 16 rows in their own order: within 1e-5 of sum |w * a| of the
// rows' result and of the scalar reference's (the integer sums are exact in
// all; only f32 scaling and accumulation round, as in matmul_test's bound (a)).
TEST_P(Interleave, MatmulEqualsTheRowsAtEveryLevel) {
  const TensorType type = GetParam();
  const TensorType act_type = quant::traits(type)->dot_type;
  const std::int64_t bl = block_len(type);
  std::mt19937 rng(6);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const auto& [n_in, n_out] :
       {std::pair<std::int64_t, std::int64_t>{bl, 16}, {3 * bl, 48}, {2048, 64}}) {
    const Interleaved m = make(type, n_in, n_out, rng);
    std::vector<std::vector<float>> wd(n_out, std::vector<float>(n_in));
    for (std::int64_t r = 0; r < n_out; ++r) get_row(m.w, r, wd[r].data());
    for (CpuLevel level : {CpuLevel::Scalar, CpuLevel::Avx2, CpuLevel::Avx512, CpuLevel::Amx}) {
      if (level > detected_cpu_level()) continue;
      const dot::GemmFns* gemm = quant::traits(type)->dot.gemm_at(level);
      for (std::int64_t n_tok : {1, 2, 3, 4, 5, 9, 16, 19}) {
        std::vector<float> x(n_tok * n_in);
        for (float& v : x) v = normal(rng);
        std::vector<double> mag(n_tok * n_out, 0.0);
        std::vector<std::byte> aq(quant::row_size(act_type, n_in));
        for (std::int64_t t = 0; t < n_tok; ++t) {
          quant::quantize_row(act_type, x.data() + t * n_in, aq.data(), n_in);
          const std::vector<double> ad = testutil::decode_act(act_type, aq.data(), n_in);
          for (std::int64_t r = 0; r < n_out; ++r)
            for (std::int64_t k = 0; k < n_in; ++k)
              mag[t * n_out + r] += std::fabs(wd[r][k] * ad[k]);
        }
        const bool own_kernel = quant::traits(type)->dot.rows16_at(level) != nullptr &&
                                !(gemm && n_tok >= gemm->min_tokens);
        const std::int64_t ldy = n_out + 5;
        std::vector<float> scalar(n_tok * ldy);
        {
          ThreadPool pool(1);
          MatmulScratch scratch;
          matmul(m.w, x.data(), n_tok, scalar.data(), ldy, pool, scratch, CpuLevel::Scalar);
        }
        for (int threads : {1, 3}) {
          ThreadPool pool(threads);
          MatmulScratch scratch;
          std::vector<float> y(n_tok * ldy, -3.0f), y16(n_tok * ldy, -3.0f);
          matmul(m.w, x.data(), n_tok, y.data(), ldy, pool, scratch, level);
          matmul(m.w16, x.data(), n_tok, y16.data(), ldy, pool, scratch, level);
          for (std::int64_t t = 0; t < n_tok; ++t) {
            for (std::int64_t r = 0; r < ldy; ++r) {
              const float a = y[t * ldy + r], b = y16[t * ldy + r];
              if (r >= n_out || !own_kernel) {
                ASSERT_EQ(a, b) << cpu_level_name(level) << " n_in " << n_in << " n_tok " << n_tok
                                << " r " << r << " t " << t;
              } else {
                // Against the level's row kernel and the scalar reference.
                for (float ref : {a, scalar[t * ldy + r]}) {
                  ASSERT_NEAR(ref, b, 1e-5 * mag[t * n_out + r] + 1e-30)
                      << cpu_level_name(level) << " n_in " << n_in << " n_tok " << n_tok << " r "
                      << r << " t " << t;
                }
              }
            }
          }
        }
      }
    }
  }
}

// matmul_many keeps interleaved jobs' rows in whole groups beside other jobs
// (a Q8_0 one in rows on the same input, the first job in rows) and gives
// each job what matmul gives it alone.
TEST_P(Interleave, ManyJobsEqualEachAlone) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const Interleaved a = make(GetParam(), 256, 48, rng), b = make(GetParam(), 256, 80, rng);
  const std::vector<std::byte> q8 = testutil::random_weights(
      TensorType::Q8_0, 37, 256, quant::row_size(TensorType::Q8_0, 256), rng);
  const WeightView w8{TensorType::Q8_0, 256, 37, q8.data(), quant::row_size(TensorType::Q8_0, 256)};
  for (std::int64_t n_tok : {1, 2, 6}) {
    std::vector<float> x(n_tok * 256);
    for (float& v : x) v = normal(rng);
    std::vector<float> ya(n_tok * 48), yb(n_tok * 80), y8(n_tok * 37), yr(n_tok * 48);
    const MatmulJob jobs[] = {{a.w16, x.data(), n_tok, ya.data(), 48},
                              {w8, x.data(), n_tok, y8.data(), 37},
                              {b.w16, x.data(), n_tok, yb.data(), 80},
                              {a.w, x.data(), n_tok, yr.data(), 48}};
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      MatmulScratch scratch;
      matmul_many(jobs, pool, scratch);
      for (const MatmulJob& j : jobs) {
        std::vector<float> alone(j.n_tokens * j.ldy);
        matmul(j.w, j.x, j.n_tokens, alone.data(), j.ldy, pool, scratch);
        EXPECT_EQ(std::vector<float>(j.y, j.y + j.n_tokens * j.ldy), alone)
            << "n_out " << j.w.n_out << " interleaved " << j.w.interleaved16 << ", " << n_tok
            << " tokens, " << threads << " threads";
      }
    }
  }
}

// Batch invariance (matmul_test's ATokensRowIsTheSameBitsInAnyBatch) on
// interleaved weights: a token's row is the same bits alone and in a batch of
// any size. At the AVX2 level decode, few-token and GEMM calls run one
// micro-kernel on the same bytes; at AVX-512 the decode kernels take each
// block's f32 steps in the GEMM's order.
TEST_P(Interleave, ATokensRowIsTheSameBitsInAnyBatch) {
  const TensorType type = GetParam();
  for (const CpuLevel level : {CpuLevel::Avx2, CpuLevel::Avx512}) {
    if (level > detected_cpu_level()) {
      std::printf("(%s skipped: this CPU runs up to %s)\n", cpu_level_name(level),
                  cpu_level_name(detected_cpu_level()));
      continue;
    }
    std::mt19937 rng(9);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const std::int64_t n_in = 2 * block_len(type) + (block_len(type) == 32 ? 64 : 0), n_out = 48;
    const Interleaved m = make(type, n_in, n_out, rng);
    // Claimed (matmul.h) wherever the level reads the layout with its own kernels.
    // Every type with the layout has its kernels at both levels.
    ASSERT_NE(quant::traits(type)->dot.rows16_at(level), nullptr);
    ASSERT_TRUE(batch_invariant(m.w16, level));
    const std::vector<std::int64_t> counts = testutil::batch_sizes_around_gemm(type, level);
    const std::int64_t n_max = *std::max_element(counts.begin(), counts.end());
    std::vector<float> x(n_max * n_in);
    for (float& v : x) v = normal(rng);
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      MatmulScratch scratch;
      std::vector<float> alone(n_max * n_out);
      for (std::int64_t t = 0; t < n_max; ++t)
        matmul(m.w16, x.data() + t * n_in, 1, alone.data() + t * n_out, n_out, pool, scratch,
               level);
      for (std::int64_t n_tok : counts) {
        std::vector<float> y(n_tok * n_out);
        matmul(m.w16, x.data(), n_tok, y.data(), n_out, pool, scratch, level);
        for (std::int64_t t = 0; t < n_tok; ++t)
          EXPECT_EQ(std::vector<float>(y.begin() + t * n_out, y.begin() + (t + 1) * n_out),
                    std::vector<float>(alone.begin() + t * n_out, alone.begin() + (t + 1) * n_out))
              << cpu_level_name(level) << ", token " << t << " of " << n_tok << ", " << threads
              << " threads";
      }
    }
  }
}

// MXFP4's scale 2^(e - 128) is built in the vector units from the exponent
// byte (normal from e = 2, subnormal below): rows of every e the f32 range
// holds here, each row one e, give the scalar reference's results within f32
// rounding of their own magnitude, plain and interleaved, at every level.
TEST(InterleaveMXFP4, EveryExponentScalesAsTheReference) {
  const std::int64_t n_in = 64, n_out = 240;
  std::mt19937 rng(10);
  Interleaved m = make(TensorType::MXFP4, n_in, n_out, rng);
  const std::size_t row = m.w.row_stride;
  for (std::int64_t r = 0; r < n_out; ++r)
    for (std::int64_t b = 0; b < n_in / 32; ++b)
      m.rows[r * row + b * sizeof(quant::BlockMXFP4)] = static_cast<std::byte>(r);
  m.groups = m.rows;
  interleave::pack_in_place(TensorType::MXFP4, n_in, n_out, m.groups.data());
  m.w.data = m.rows.data();
  m.w16.data = m.groups.data();
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (std::int64_t n_tok : {1, 3, 16}) {
    std::vector<float> x(n_tok * n_in);
    for (float& v : x) v = normal(rng);
    std::vector<float> ref(n_tok * n_out);
    std::vector<double> mag(n_tok * n_out, 0.0);
    std::vector<float> wd(n_in);
    std::vector<std::byte> aq(quant::row_size(TensorType::Q8_0, n_in));
    for (std::int64_t t = 0; t < n_tok; ++t) {
      quant::quantize_row(TensorType::Q8_0, x.data() + t * n_in, aq.data(), n_in);
      const std::vector<double> ad = testutil::decode_act(TensorType::Q8_0, aq.data(), n_in);
      for (std::int64_t r = 0; r < n_out; ++r) {
        get_row(m.w, r, wd.data());
        for (std::int64_t k = 0; k < n_in; ++k) mag[t * n_out + r] += std::fabs(wd[k] * ad[k]);
      }
    }
    ThreadPool pool(2);
    MatmulScratch scratch;
    matmul(m.w, x.data(), n_tok, ref.data(), n_out, pool, scratch, CpuLevel::Scalar);
    for (CpuLevel level : {CpuLevel::Avx2, CpuLevel::Avx512}) {
      if (level > detected_cpu_level()) continue;
      for (const WeightView* w : {&m.w, &m.w16}) {
        std::vector<float> y(n_tok * n_out);
        matmul(*w, x.data(), n_tok, y.data(), n_out, pool, scratch, level);
        for (std::int64_t i = 0; i < n_tok * n_out; ++i)
          ASSERT_NEAR(y[i], ref[i], 1e-5 * mag[i])
              << cpu_level_name(level) << " e " << i % n_out << " token " << i / n_out
              << (w == &m.w16 ? " interleaved" : " rows");
      }
    }
  }
}

TEST_P(Interleave, ViewsItCannotDescribeAreRefused) {
  std::mt19937 rng(8);
  const std::int64_t n = 2 * block_len(GetParam());
  Interleaved m = make(GetParam(), n, 32, rng);
  ThreadPool pool(1);
  MatmulScratch scratch;
  std::vector<float> x(n, 1.0f), y(32);
  WeightView partial = m.w16;
  partial.n_out = 24;  // not whole groups
  EXPECT_THROW(matmul(partial, x.data(), 1, y.data(), 32, pool, scratch), Error);
  WeightView padded = m.w16;
  padded.row_stride += 2;
  EXPECT_THROW(matmul(padded, x.data(), 1, y.data(), 32, pool, scratch), Error);
  WeightView f16 = m.w16;  // a type without the layout
  f16.type = TensorType::F16;
  f16.n_in = 256;
  f16.row_stride = quant::row_size(TensorType::F16, 256);
  std::vector<float> x256(256, 1.0f);
  EXPECT_THROW(matmul(f16, x256.data(), 1, y.data(), 32, pool, scratch), Error);
}

INSTANTIATE_TEST_SUITE_P(Types, Interleave,
                         ::testing::Values(TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0,
                                           TensorType::Q5_1, TensorType::Q8_0, TensorType::IQ4_NL,
                                           TensorType::MXFP4, TensorType::Q2_K, TensorType::Q3_K,
                                           TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K,
                                           TensorType::IQ4_XS),
                         [](const auto& info) { return quant::type_name(info.param); });

}  // namespace
}  // namespace seam
