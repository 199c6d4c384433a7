// matmul against a naive double-precision reference on the dequantized weights,
// for every weight type at every CPU level this machine runs, odd shapes and
// one to four threads.
#include "compute/matmul.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "compute/quant.h"
#include "compute/quant_blocks.h"
#include "core/half.h"
#include "quant_testutil.h"
#include "seam/error.h"

namespace seam {
namespace {

using testutil::decode_act;

class MatmulTypes : public ::testing::TestWithParam<std::tuple<TensorType, CpuLevel>> {};

// Two checks per output, both with bounds derived from the formats:
// (a) against the reference on the *quantized* activations (decoded): the kernel's
//     integer sums are exact, so only f32 rounding of the per-block scaling and of
//     the accumulation remains: 1e-5 of sum|w*a| (>> n_blocks * 2^-24). Q8_1 adds the
//     fp16 rounding of its s = d*sum(q) field, which meets the weight's min m:
//     |m| * |d * sum q| * 2^-10 per block (2^-11 for s, 2^-11 for d's own rounding).
// (b) against the reference on the f32 activations: quantizing to 8 bits moves each
//     activation by at most half a step, amax/254, plus the fp16 rounding of the
//     scale (127 steps * d * 2^-11 = amax/2048); the error is then at most
//     sum_k |w_k| * amax(block of k) * (1/254 + 1/2048), plus (a)'s bound.
TEST_P(MatmulTypes, MatchesDoubleReference) {
  const auto [type, level] = GetParam();
  if (level > detected_cpu_level()) {
    GTEST_SKIP() << "this CPU runs up to " << cpu_level_name(detected_cpu_level()) << ", not "
                 << cpu_level_name(level);
  }
  const quant::TypeTraits& tr = *quant::traits(type);
  const TensorType dt = tr.dot_type;
  const std::int64_t n_in = testutil::test_row_len(type);
  const std::size_t row = quant::row_size(type, n_in);
  const std::int64_t act_block = dt == TensorType::Q8_K ? 256 : dt == TensorType::F32 ? 1 : 32;
  std::mt19937 rng(1234 + static_cast<int>(type));
  std::normal_distribution<float> normal(0.0f, 1.0f);

  ThreadPool pools[3] = {ThreadPool(1), ThreadPool(3), ThreadPool(4)};
  MatmulScratch scratch;
  for (std::int64_t n_out : {1, 3, 37, 129}) {
    const std::size_t stride = row + (n_out % 2 ? 8 : 0);  // padded rows for odd n_out
    const std::vector<std::byte> wbytes = testutil::random_weights(type, n_out, n_in, stride, rng);
    const WeightView w{type, n_in, n_out, wbytes.data(), stride};
    std::vector<std::vector<double>> wd(n_out);  // [n_out][n_in] dequantized
    std::vector<float> tmp(n_in);
    for (std::int64_t r = 0; r < n_out; ++r) {
      get_row(w, r, tmp.data());
      wd[r].assign(tmp.begin(), tmp.end());
    }
    for (std::int64_t n_tok : {1, 2, 5, 13, 30, 48}) {
      std::vector<float> x(n_tok * n_in);  // [n_tok][n_in]
      for (float& v : x) v = normal(rng);
      // Quantized activations as the kernel sees them.
      std::vector<std::vector<double>> ad(n_tok);
      const std::size_t arow = dt == TensorType::F32 ? n_in * 4 : quant::row_size(dt, n_in);
      std::vector<std::byte> aq(arow);
      for (std::int64_t t = 0; t < n_tok; ++t) {
        quant::quantize_row(dt, x.data() + t * n_in, aq.data(), n_in);
        ad[t] = decode_act(dt, aq.data(), n_in);
      }
      // A GEMM may round the activations once more (the BF16 one, to bf16).
      const dot::GemmFns* gemm = tr.dot.gemm_at(level);
      const double act_rel = gemm && n_tok >= gemm->min_tokens ? gemm->act_rel_error : 0.0;
      // References and bounds per (token, row): [n_tok][n_out].
      std::vector<double> ref_q(n_tok * n_out), ref_x(n_tok * n_out), tol_a(n_tok * n_out),
          tol_b(n_tok * n_out);
      for (std::int64_t t = 0; t < n_tok; ++t) {
        const float* xt = x.data() + t * n_in;
        std::vector<double> amax(n_in / act_block, 0.0);
        for (std::int64_t k = 0; k < n_in; ++k) {
          amax[k / act_block] = std::max(amax[k / act_block], std::fabs(double{xt[k]}));
        }
        for (std::int64_t r = 0; r < n_out; ++r) {
          double rq = 0, rx = 0, mag = 0, qerr = 0, q81 = 0;
          for (std::int64_t k = 0; k < n_in; ++k) {
            rq += wd[r][k] * ad[t][k];
            rx += wd[r][k] * xt[k];
            mag += std::fabs(wd[r][k] * ad[t][k]);
            if (act_block > 1) {
              qerr += std::fabs(wd[r][k]) * amax[k / act_block] * (1.0 / 254 + 1.0 / 2048);
            }
          }
          if (dt == TensorType::Q8_1) {
            for (std::int64_t b = 0; b < n_in / 32; ++b) {
              std::uint16_t mh;
              std::memcpy(&mh, wbytes.data() + r * stride + b * tr.type_size + 2, 2);
              double s = 0;
              for (int j = 0; j < 32; ++j) s += ad[t][b * 32 + j];
              q81 += std::fabs(fp16_to_f32(mh) * s) * (1.0 / 1024);
            }
          }
          const std::size_t i = t * n_out + r;
          ref_q[i] = rq;
          ref_x[i] = rx;
          tol_a[i] = (1e-5 + act_rel) * mag + q81 + 1e-30;
          tol_b[i] = tol_a[i] + qerr;
        }
      }
      for (int p = 0; p < 3; ++p) {
        const std::int64_t ldy = n_out + 3;
        std::vector<float> y(n_tok * ldy, 12345.0f);
        matmul(w, x.data(), n_tok, y.data(), ldy, pools[p], scratch, level);
        for (std::int64_t t = 0; t < n_tok; ++t) {
          for (std::int64_t r = 0; r < n_out; ++r) {
            const std::size_t i = t * n_out + r;
            const double got = y[t * ldy + r];
            ASSERT_NEAR(got, ref_q[i], tol_a[i])
                << quant::type_name(type) << " n_out " << n_out << " n_tok " << n_tok << " threads "
                << pools[p].size() << " r " << r << " t " << t;
            ASSERT_NEAR(got, ref_x[i], tol_b[i]) << quant::type_name(type) << " r " << r;
          }
          for (std::int64_t r = n_out; r < ldy; ++r) ASSERT_EQ(y[t * ldy + r], 12345.0f);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatmulTypes,
                         ::testing::Combine(::testing::ValuesIn(testutil::kernel_types()),
                                            ::testing::Values(CpuLevel::Scalar, CpuLevel::Avx2,
                                                              CpuLevel::Avx512, CpuLevel::Amx)),
                         [](const auto& info) {
                           return quant::type_name(std::get<0>(info.param)) + "_" +
                                  cpu_level_name(std::get<1>(info.param));
                         });

std::vector<char> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}

// Real llama-quantize output (shared/models/quant/dequant, 512 x 512) multiplied
// against llama.cpp's own decoded f32 values of the same tensor, so this checks
// decode + activation quantization + kernels without trusting our decoder.
// Bound as (b) above: activation quantization error plus f32 rounding.
// Batch invariance: a token's output row is the same bits whether the token is
// multiplied alone or beside others (1-row, few-row and GEMM kernels alike),
// so a sequence decodes the same in seam serve's shared batches as alone. One
// computation claimed reproducible, hence exact equality. Checked wherever
// matmul.h's batch_invariant() claims it for the file's layout (interleave_test:
// the interleaved layouts); the other (type, level) pairs are skipped, saying so.
TEST(Matmul, BatchInvariantClaimsTheKernelsThatAddInOneOrder) {
  auto claims = [](TensorType type, CpuLevel level, bool interleaved) {
    WeightView w{type, 256, 16, nullptr, quant::row_size(type, 256)};
    w.interleaved16 = interleaved;
    return batch_invariant(w, level);
  };
  for (TensorType t : testutil::kernel_types()) {
    EXPECT_TRUE(claims(t, CpuLevel::Scalar, false)) << quant::type_name(t);
    EXPECT_FALSE(claims(t, CpuLevel::Amx, false)) << quant::type_name(t);
  }
  for (TensorType t : {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q4_0,
                       TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0,
                       TensorType::IQ4_NL, TensorType::MXFP4})
    EXPECT_TRUE(claims(t, CpuLevel::Avx2, false)) << quant::type_name(t);
  for (TensorType t : {TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K,
                       TensorType::Q6_K, TensorType::IQ4_XS}) {
    EXPECT_FALSE(claims(t, CpuLevel::Avx2, false)) << quant::type_name(t);
    EXPECT_TRUE(claims(t, CpuLevel::Avx2, true)) << quant::type_name(t);
  }
  for (TensorType t :
       {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0,
        TensorType::IQ4_NL, TensorType::MXFP4, TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K,
        TensorType::Q5_K, TensorType::Q6_K, TensorType::IQ4_XS}) {
    EXPECT_FALSE(claims(t, CpuLevel::Avx512, false)) << quant::type_name(t);
    EXPECT_TRUE(claims(t, CpuLevel::Avx512, true)) << quant::type_name(t);
  }
  for (TensorType t : {TensorType::F32, TensorType::F16, TensorType::BF16})
    EXPECT_TRUE(claims(t, CpuLevel::Avx512, false)) << quant::type_name(t);
}

TEST_P(MatmulTypes, ATokensRowIsTheSameBitsInAnyBatch) {
  const auto [type, level] = GetParam();
  if (level > detected_cpu_level())
    GTEST_SKIP() << "this CPU runs up to " << cpu_level_name(detected_cpu_level());
  std::vector<std::int64_t> lengths = {testutil::test_row_len(type)};
  if (!batch_invariant(WeightView{type, lengths[0], 37, nullptr, 0}, level))
    GTEST_SKIP() << quant::type_name(type) << " at " << cpu_level_name(level)
                 << " is not batch-invariant yet (docs/server.md)";
  if (quant::traits(type)->block_size == 1) lengths = {83, 576, 587, 13, 5};  // every tail
  std::mt19937 rng(77 + static_cast<int>(type));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::vector<std::int64_t> counts = testutil::batch_sizes_around_gemm(type, level);
  const std::int64_t n_max = *std::max_element(counts.begin(), counts.end());
  for (const std::int64_t n_in : lengths) {
    const std::int64_t n_out = 37;
    const std::size_t row = quant::row_size(type, n_in);
    const auto wbytes = testutil::random_weights(type, n_out, n_in, row, rng);
    const WeightView w{type, n_in, n_out, wbytes.data(), row};
    std::vector<float> x(static_cast<std::size_t>(n_max * n_in));
    for (float& v : x) v = normal(rng);
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      MatmulScratch scratch;
      std::vector<std::vector<float>> alone(n_max, std::vector<float>(n_out));
      for (std::int64_t t = 0; t < n_max; ++t)
        matmul(w, x.data() + t * n_in, 1, alone[t].data(), n_out, pool, scratch, level);
      for (std::int64_t n_tok : counts) {
        std::vector<float> y(static_cast<std::size_t>(n_tok * n_out));
        matmul(w, x.data(), n_tok, y.data(), n_out, pool, scratch, level);
        for (std::int64_t t = 0; t < n_tok; ++t)
          EXPECT_EQ(std::vector<float>(y.begin() + t * n_out, y.begin() + (t + 1) * n_out),
                    alone[t])
              << "n_in " << n_in << ", token " << t << " of " << n_tok << ", " << threads
              << " threads";
      }
    }
  }
}

TEST(Matmul, RealTensorsAgainstLlamaCppDecodedWeights) {
  constexpr std::int64_t kN = 512;
  ThreadPool pool(2);
  MatmulScratch scratch;
  std::mt19937 rng(77);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::int64_t n_tok = 5;
  std::vector<float> x(n_tok * kN);
  for (float& v : x) v = normal(rng);
  for (const char* name : {"f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k",
                           "q4_k", "q5_k", "q6_k"}) {
    const std::string base =
        std::string(SEAM_SHARED_DIR) + "/models/quant/dequant/" + name + ".blk.0.attn_q.weight";
    const std::vector<char> raw = read_file(base + ".raw"), ref_bytes = read_file(base + ".f32");
    ASSERT_EQ(ref_bytes.size(), static_cast<std::size_t>(kN * kN * 4)) << base;
    std::vector<float> wref(kN * kN);  // [512 out][512 in], llama.cpp's to_float
    std::memcpy(wref.data(), ref_bytes.data(), ref_bytes.size());
    TensorType type = TensorType::F32;
    for (TensorType t : testutil::kernel_types()) {
      std::string tn = quant::type_name(t);
      for (char& c : tn) c = static_cast<char>(std::tolower(c));
      if (tn == name) type = t;
    }
    ASSERT_NE(type, TensorType::F32) << name;
    const std::size_t row = quant::row_size(type, kN);
    ASSERT_EQ(raw.size(), row * kN);
    const WeightView w{type, kN, kN, reinterpret_cast<const std::byte*>(raw.data()), row};
    std::vector<float> y(n_tok * kN);
    for (CpuLevel level : {CpuLevel::Scalar, CpuLevel::Avx2, CpuLevel::Avx512, CpuLevel::Amx}) {
      if (level > detected_cpu_level()) continue;
      matmul(w, x.data(), n_tok, y.data(), kN, pool, scratch, level);
      const TensorType dt = quant::traits(type)->dot_type;
      const std::int64_t ab = dt == TensorType::Q8_K ? 256 : dt == TensorType::F32 ? 1 : 32;
      const bool has_m = dt == TensorType::Q8_1;  // Q4_1 / Q5_1: fp16 m at byte 2 of each block
      for (std::int64_t t = 0; t < n_tok; ++t) {
        const float* xt = x.data() + t * kN;
        std::vector<double> amax(kN / ab, 0.0), asum(kN / 32, 0.0);
        for (std::int64_t k = 0; k < kN; ++k) {
          amax[k / ab] = std::max(amax[k / ab], std::fabs(double{xt[k]}));
          asum[k / 32] += std::fabs(double{xt[k]});
        }
        for (std::int64_t r = 0; r < kN; ++r) {
          double ref = 0, mag = 0, qerr = 0, q81 = 0;
          for (std::int64_t k = 0; k < kN; ++k) {
            const double wk = wref[r * kN + k];
            ref += wk * xt[k];
            mag += std::fabs(wk * xt[k]);
            if (ab > 1) qerr += std::fabs(wk) * amax[k / ab] * (1.0 / 254 + 1.0 / 2048);
          }
          if (has_m) {
            // |m| * |s| * 2^-10, with |s| = |d * sum q| <= sum|x| * (1 + 1/127) + rounding.
            for (std::int64_t b = 0; b < kN / 32; ++b) {
              std::uint16_t mh;
              std::memcpy(&mh, raw.data() + r * row + b * quant::traits(type)->type_size + 2, 2);
              q81 += std::fabs(fp16_to_f32(mh)) * (asum[b] * 1.01 + amax[b]) / 1024;
            }
          }
          ASSERT_NEAR(y[t * kN + r], ref, 1e-5 * mag + q81 + qerr)
              << name << " " << cpu_level_name(level) << " r " << r << " t " << t;
        }
      }
    }
  }
}

TEST(Matmul, UnsupportedTypeIsNamed) {
  ThreadPool pool(1);
  MatmulScratch scratch;
  std::vector<std::byte> data(1024);
  float x[256] = {}, y[1];
  const WeightView w{TensorType::IQ2_XS, 256, 1, data.data(), 74};
  try {
    matmul(w, x, 1, y, 1, pool, scratch);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::Unsupported);
    EXPECT_NE(std::string(e.what()).find("IQ2_XS"), std::string::npos) << e.what();
  }
  float row[256];
  EXPECT_THROW(get_row(w, 0, row), Error);
}

TEST(Matmul, RejectsInconsistentShapes) {
  ThreadPool pool(1);
  MatmulScratch scratch;
  std::vector<std::byte> data(34 * 4);
  float x[64] = {}, y[8];
  // Row length not a multiple of the block.
  EXPECT_THROW(matmul({TensorType::Q8_0, 48, 2, data.data(), 68}, x, 1, y, 2, pool, scratch),
               Error);
  // Rows too short for their elements.
  EXPECT_THROW(matmul({TensorType::Q8_0, 64, 2, data.data(), 34}, x, 1, y, 2, pool, scratch),
               Error);
  // Misaligned rows (fp16 scales at odd addresses).
  EXPECT_THROW(matmul({TensorType::Q8_0, 32, 2, data.data(), 35}, x, 1, y, 2, pool, scratch),
               Error);
  EXPECT_THROW(matmul({TensorType::Q8_0, 32, 2, data.data() + 1, 34}, x, 1, y, 2, pool, scratch),
               Error);
  // ldy smaller than n_out.
  EXPECT_THROW(matmul({TensorType::Q8_0, 64, 2, data.data(), 68}, x, 1, y, 1, pool, scratch),
               Error);
  // Zero tokens is a no-op, not an error.
  EXPECT_NO_THROW(matmul({TensorType::Q8_0, 64, 2, data.data(), 68}, x, 0, y, 2, pool, scratch));
}

// matmul_many: every job's output is what matmul gives for it alone. The
// same kernel runs each row over the same tiles of the same quantized
// activations in both, so the outputs are equal, whatever the threads and
// whichever job a work item belongs to. Jobs mix types whose activation rows
// have different sizes and alignments (Q8_0, Q8_K, Q8_1, f32), token counts on
// both sides of the GEMM threshold, an empty job and output strides wider
// than the rows.
TEST(Matmul, ManyJobsEqualEachAlone) {
  std::mt19937 rng(91);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  struct Shape {
    TensorType type;
    std::int64_t n_in, n_out, n_tok, ldy;
  };
  const Shape shapes[] = {{TensorType::Q4_0, 96, 37, 1, 37},   {TensorType::Q4_K, 256, 70, 3, 80},
                          {TensorType::Q6_K, 512, 33, 1, 33},  {TensorType::Q4_1, 64, 50, 2, 50},
                          {TensorType::F16, 83, 19, 1, 20},    {TensorType::Q8_0, 160, 129, 1, 129},
                          {TensorType::MXFP4, 64, 45, 30, 45}, {TensorType::IQ4_NL, 96, 0, 2, 1},
                          {TensorType::IQ4_NL, 96, 66, 4, 66}};
  std::vector<std::vector<std::byte>> weights;
  std::vector<std::vector<float>> xs, ys;
  std::vector<MatmulJob> jobs;
  for (const Shape& sh : shapes) {
    const std::size_t stride = quant::row_size(sh.type, sh.n_in);
    weights.push_back(testutil::random_weights(sh.type, sh.n_out, sh.n_in, stride, rng));
    xs.emplace_back(static_cast<std::size_t>(sh.n_tok * sh.n_in));
    for (float& v : xs.back()) v = normal(rng);
    ys.emplace_back(static_cast<std::size_t>(sh.n_tok * sh.ldy), -7.0f);
  }
  for (std::size_t i = 0; i < std::size(shapes); ++i) {
    const Shape& sh = shapes[i];
    const WeightView w{sh.type, sh.n_in, sh.n_out, weights[i].data(),
                       quant::row_size(sh.type, sh.n_in)};
    jobs.push_back({w, xs[i].data(), sh.n_tok, ys[i].data(), sh.ldy});
  }
  // GEMM jobs reading one input (a layer's Q, K and V): the later ones reuse
  // the first's quantized and prepared activations where the types allow, a
  // job of another dot type in between included; the last job has the same
  // shape and another input, which it must not take for the one before.
  const std::int64_t shared_tok = 40, shared_in = 256;
  std::vector<float> shared_x(static_cast<std::size_t>(shared_tok * shared_in));
  for (float& v : shared_x) v = normal(rng);
  const Shape shared[] = {{TensorType::Q4_K, shared_in, 40, shared_tok, 40},
                          {TensorType::Q4_K, shared_in, 24, shared_tok, 24},
                          {TensorType::Q6_K, shared_in, 17, shared_tok, 17},
                          {TensorType::Q8_0, shared_in, 33, shared_tok, 33},
                          {TensorType::Q8_0, shared_in, 16, shared_tok, 16}};
  std::vector<TensorType> types;
  for (const Shape& sh : shapes) types.push_back(sh.type);
  std::vector<float> other_x(shared_x.size());
  for (float& v : other_x) v = normal(rng);
  for (const Shape& sh : shared) {
    const std::size_t stride = quant::row_size(sh.type, sh.n_in);
    weights.push_back(testutil::random_weights(sh.type, sh.n_out, sh.n_in, stride, rng));
    ys.emplace_back(static_cast<std::size_t>(sh.n_tok * sh.ldy), -7.0f);
    const WeightView w{sh.type, sh.n_in, sh.n_out, weights.back().data(), stride};
    const bool last = &sh == &shared[std::size(shared) - 1];
    jobs.push_back(
        {w, last ? other_x.data() : shared_x.data(), sh.n_tok, ys.back().data(), sh.ldy});
    types.push_back(sh.type);
  }
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    MatmulScratch scratch;
    for (auto& y : ys) std::fill(y.begin(), y.end(), -7.0f);
    matmul_many(jobs, pool, scratch);
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      std::vector<float> alone(ys[i].size(), -7.0f);
      matmul(jobs[i].w, jobs[i].x, jobs[i].n_tokens, alone.data(), jobs[i].ldy, pool, scratch);
      EXPECT_EQ(ys[i], alone) << quant::type_name(types[i]) << " job " << i << ", " << threads
                              << " threads";
    }
  }
  // A bad job is refused before any job runs.
  std::vector<MatmulJob> bad = jobs;
  bad.back().ldy = 1;  // after the GEMM job, which must not have run either
  ThreadPool pool(2);
  MatmulScratch scratch;
  for (auto& y : ys) std::fill(y.begin(), y.end(), -7.0f);
  EXPECT_THROW(matmul_many(bad, pool, scratch), Error);
  for (const auto& y : ys)
    for (float v : y) ASSERT_EQ(v, -7.0f);
}

// Decode of float rows runs dot.h's FloatRows kernels (long_count rows at a
// time from kLongRow, kShortRowRows below, spaced apart) and
// the one-row kernel on the rest: every output is the level's one-row
// kernel's bits, whatever the thread split, alone or beside a job of the
// other length (matmul_many's work items are then cut for both).
TEST(Matmul, FloatRowsDecodeAsTheOneRowKernel) {
  if (detected_cpu_level() < CpuLevel::Avx2)
    GTEST_SKIP() << "this CPU runs up to " << cpu_level_name(detected_cpu_level());
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const CpuLevel level : {CpuLevel::Avx2, CpuLevel::Avx512}) {
    if (level > detected_cpu_level()) continue;
    for (TensorType type : {TensorType::F32, TensorType::F16, TensorType::BF16}) {
      const dot::DotFn one_row = quant::traits(type)->dot.at(level);
      ASSERT_NE(one_row, nullptr);
      struct Job {
        std::vector<std::byte> w;
        std::vector<float> x, want;
        WeightView view;
      };
      std::vector<Job> jobs;
      // 600: short rows whose last 24 elements take the kernels' masked tail.
      for (const std::int64_t n_in : {dot::kLongRow + 48, std::int64_t{576}, std::int64_t{600}}) {
        const std::int64_t n_out = 45;
        const std::size_t row = quant::row_size(type, n_in);
        Job j{testutil::random_weights(type, n_out, n_in, row, rng),
              std::vector<float>(n_in),
              std::vector<float>(n_out),
              {}};
        for (float& v : j.x) v = normal(rng);
        for (std::int64_t r = 0; r < n_out; ++r)
          one_row(n_in, j.w.data() + r * row, j.x.data(), n_in * sizeof(float), 1, &j.want[r], 1);
        j.view = {type, n_in, n_out, j.w.data(), row};
        jobs.push_back(std::move(j));
      }
      for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        MatmulScratch scratch;
        std::vector<MatmulJob> many;
        std::vector<std::vector<float>> ys;
        for (const Job& j : jobs) {
          std::vector<float> y(j.want.size(), -7.0f);
          matmul(j.view, j.x.data(), 1, y.data(), j.view.n_out, pool, scratch, level);
          EXPECT_EQ(y, j.want) << quant::type_name(type) << " at " << cpu_level_name(level)
                               << ", n_in " << j.view.n_in << ", " << threads << " threads";
          ys.emplace_back(j.want.size(), -7.0f);
        }
        if (active_cpu_level() != level) continue;  // matmul_many runs the active level
        for (std::size_t i = 0; i < jobs.size(); ++i)
          many.push_back({jobs[i].view, jobs[i].x.data(), 1, ys[i].data(), jobs[i].view.n_out});
        matmul_many(many, pool, scratch);
        for (std::size_t i = 0; i < jobs.size(); ++i)
          EXPECT_EQ(ys[i], jobs[i].want) << quant::type_name(type) << " n_in " << jobs[i].view.n_in
                                         << " beside another, " << threads << " threads";
      }
    }
  }
}

// Jobs that read the same input (a layer's Q, K and V; its gate and up) share
// one quantized copy and, where the kernels match, one prepared layout: each
// output must still be what matmul gives for its job alone. The types mix
// activation layouts that can be shared (Q4_K and Q6_K both read Q8_K; Q4_0
// and Q8_0 read Q8_0, prepared differently at AVX-512) and one that cannot
// (F16), and a Q8_0 job on a different input sits between them.
TEST(Matmul, JobsSharingAnInputEqualEachAlone) {
  std::mt19937 rng(92);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const TensorType types[] = {TensorType::Q4_K, TensorType::Q6_K, TensorType::Q4_0,
                              TensorType::Q8_0, TensorType::F16,  TensorType::Q8_0,
                              TensorType::Q4_K};
  const std::int64_t n_in = 512, n_out = 45;
  for (std::int64_t n_tok : {1, 2}) {
    std::vector<float> x(static_cast<std::size_t>(n_tok * n_in)), other(x.size());
    for (float& v : x) v = normal(rng);
    for (float& v : other) v = normal(rng);
    std::vector<std::vector<std::byte>> weights;
    std::vector<std::vector<float>> ys;
    std::vector<MatmulJob> jobs;
    for (std::size_t i = 0; i < std::size(types); ++i) {
      const std::size_t stride = quant::row_size(types[i], n_in);
      weights.push_back(testutil::random_weights(types[i], n_out, n_in, stride, rng));
      ys.emplace_back(static_cast<std::size_t>(n_tok * n_out), -7.0f);
    }
    for (std::size_t i = 0; i < std::size(types); ++i) {
      const WeightView w{types[i], n_in, n_out, weights[i].data(), quant::row_size(types[i], n_in)};
      jobs.push_back({w, i == 3 ? other.data() : x.data(), n_tok, ys[i].data(), n_out});
    }
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      MatmulScratch scratch;
      for (auto& y : ys) std::fill(y.begin(), y.end(), -7.0f);
      matmul_many(jobs, pool, scratch);
      for (std::size_t i = 0; i < jobs.size(); ++i) {
        std::vector<float> alone(ys[i].size(), -7.0f);
        matmul(jobs[i].w, jobs[i].x, n_tok, alone.data(), n_out, pool, scratch);
        EXPECT_EQ(ys[i], alone) << quant::type_name(types[i]) << " job " << i << ", " << n_tok
                                << " tokens, " << threads << " threads";
      }
    }
  }
}

}  // namespace
}  // namespace seam
