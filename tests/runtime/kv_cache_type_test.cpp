// The F16 KV cache (the default) against the F32 one on the same model and
// tokens: the logits may differ only by what rounding K and V to F16 explains.
//
// The bound. Each cached element is rounded with relative error u = 2^-11.
// In one attention head a score s_j = scale q.k_j moves by at most
// u * A, A = max_j scale sum_i |q_i k_ji| (the scores' absolute size); the
// softmax weights then move by at most 2 u A in L1, and the output
// sum_j p_j v_j by at most u (1 + 2 A) max |v| (V's own rounding plus the
// weights'). Every layer adds such a perturbation to the residual stream and
// the rest of the network carries it to the logits; with scores of at most
// A = 8 in these models and no layer amplifying a perturbation more than the
// stream's own scale, the logits move by at most n_layer (1 + 2 A) u relative
// to their largest magnitude.
//
// Q8_0 (blocks of 32 int8 and an F16 scale d = amax / 127): an element moves by
// at most d / 2 + 127 d 2^-11 = amax (1/254 + 2^-11) =: amax e8, relative to
// its block's largest magnitude rather than to itself; taking A with each k at
// its block's largest magnitude (still below 8 in the model below), the same
// argument gives n_layer (1 + 2 A) e8.
#include <gtest/gtest.h>

#include <cmath>

#include "python_tools.h"
#include "seam/error.h"
#include "test_model.h"

namespace seam {
namespace {

using namespace seam::testing;

constexpr double kU = 1.0 / 2048.0;  // 2^-11: F16's relative rounding error
constexpr double kMaxScore = 8.0;

// Prefill in chunks of 7, then 6 one-token decodes: every row's logits.
std::vector<float> run(const Model& m, const std::vector<Token>& ids, CacheType type) {
  auto s = m.session({128, 7, 1, type});
  std::vector<float> out;
  const std::size_t n_prefill = ids.size() - 6;
  for (const auto& row : decode_all(*s, std::span(ids).first(n_prefill), 0))
    out.insert(out.end(), row.begin(), row.end());
  for (std::size_t i = n_prefill; i < ids.size(); ++i) {
    const auto row = decode_all(*s, std::span(ids).subspan(i, 1), 0, static_cast<std::int32_t>(i));
    out.insert(out.end(), row[0].begin(), row[0].end());
  }
  return out;
}

void expect_within_bound(const Model& m, const std::string& name, CacheType type = CacheType::F16) {
  const std::size_t nv = m.info().n_vocab;
  const std::vector<Token> ids = random_prompt(nv, 40, 5);
  const std::vector<float> f32 = run(m, ids, CacheType::F32);
  const std::vector<float> other = run(m, ids, type);
  const double u = type == CacheType::F16 ? kU : 1.0 / 254.0 + kU;
  const double bound = m.info().n_layer * (1 + 2 * kMaxScore) * u;
  const double worst = worst_rel(other, f32, nv);
  std::printf("[ %s ] %s vs F32 KV cache: worst relative logit difference %.3g (bound %.3g)\n",
              name.c_str(), type == CacheType::F16 ? "F16" : "Q8_0", worst, bound);
  EXPECT_LT(worst, bound) << name;
  // The caches really differ: F16 is not silently stored as F32.
  EXPECT_GT(worst, 0.0) << name;
}

TEST(KvCacheType, F16WithinRoundingBoundOfF32Stories260K) {
  expect_within_bound(*stories(), "stories260K");
}

TEST(KvCacheType, F16WithinRoundingBoundOfF32GqaModel) {
  const std::string path = generate_model(
      "kvtype_gqa",
      "--dim 128 --layers 3 --heads 8 --kv-heads 2 --ffn 256 --vocab 300 --dtype F32 "
      "--seed 12");
  expect_within_bound(*load_two_threads(path), "gqa_f32_weights");
}

TEST(KvCacheType, Q8WithinQuantizationBoundOfF32HeadSize32) {
  const std::string path = generate_model(
      "kvtype_hd32",
      "--dim 128 --layers 3 --heads 4 --kv-heads 2 --ffn 256 --vocab 300 --dtype F32 "
      "--seed 13");
  expect_within_bound(*load_two_threads(path), "gqa_hd32", CacheType::Q8_0);
}

TEST(KvCacheType, Q8RefusedWhenHeadSizeIsNotAMultipleOf32) {
  SessionConfig sc{64, 8, 1};
  sc.cache_type = CacheType::Q8_0;  // stories260K: head size 8
  try {
    stories()->session(sc);
    ADD_FAILURE() << "a Q8_0 cache was accepted for head size 8";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("multiple of 32"), std::string::npos) << e.what();
  }
}

TEST(KvCacheType, UnknownTypeIsRefused) {
  SessionConfig sc{64, 8, 1};
  sc.cache_type = static_cast<CacheType>(7);
  try {
    stories()->session(sc);
    ADD_FAILURE() << "an unknown cache type was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::InvalidArgument);
  }
}

}  // namespace
}  // namespace seam
