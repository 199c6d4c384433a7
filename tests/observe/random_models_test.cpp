// The observer on random-weight models against numpy's logits (tools/reference.py):
// --compare (KL divergence and cross-entropy between two live models) and the
// first token of a model that adds no BOS.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <variant>
#include <vector>

#include "runtime/python_tools.h"
#include "runtime/test_model.h"
#include "seam/error.h"
#include "seam/observe.h"

namespace seam {
namespace {

using namespace seam::testing;

const char* kText = "the cat sat on a mat and then it ran to the hat of the bat in a vat";

std::vector<TokenEvent> tokens_of(Observer& obs, const std::string& text, SummaryEvent& s) {
  obs.feed(text);
  obs.finish();
  std::vector<TokenEvent> out;
  for (ObserveEvent& e : obs.take_events()) {
    if (auto* t = std::get_if<TokenEvent>(&e)) out.push_back(std::move(*t));
    if (auto* x = std::get_if<SummaryEvent>(&e)) s = *x;
  }
  return out;
}

// The scores below are compared within float summation order (1e-4 bits and
// tighter), which an F16 cache's rounding exceeds: K and V stay F32.
ObserveOptions quiet() {
  ObserveOptions o;
  o.cache_type = CacheType::F32;
  o.interject = false;
  return o;
}

TEST(Compare, SameModelTwiceGivesZeroKl) {
  auto m = stories();
  Observer obs(m, quiet(), m);
  SummaryEvent s;
  const auto toks = tokens_of(obs, "Once upon a time, there was a little dog named Max.", s);
  ASSERT_FALSE(toks.empty());
  double sum_s = 0, sum_h = 0, worst = 0;
  for (const TokenEvent& t : toks) {
    // The same logits on both sides: every term p (log p - log q) is exactly 0.
    EXPECT_EQ(t.kl_bits, 0.0);
    // H(P, P) = H(P); the entropy comes from the float-exp scan (observer_test.cpp
    // derives its bound per row; on these rows it stays below 1e-5 bits).
    EXPECT_NEAR(t.xent_bits, t.entropy_bits, 1e-5);
    worst = std::max(worst, std::fabs(t.xent_bits - t.entropy_bits));
    sum_s += t.surprisal_bits;
    sum_h += t.entropy_bits;
  }
  EXPECT_EQ(s.mean_kl_bits, 0.0);
  EXPECT_EQ(s.mean_kl_stderr_bits, 0.0);
  std::printf("worst |xent - entropy| %.3g bits\n", worst);
  // Binoculars of a model against itself: mean surprisal / mean entropy (the
  // summary divides by the cross-entropies, each within 1e-5 bits of H).
  EXPECT_NEAR(s.binoculars, sum_s / sum_h, 1e-5 * s.binoculars);
}

TEST(Compare, KlEqualsNumpyFromBothLogitRows) {
  const std::string args = "--dim 48 --layers 2 --heads 3 --ffn 100 --vocab 300 --dtype F32";
  const std::string pa = generate_model("cmp_a", args + " --seed 11");
  const std::string pb = generate_model("cmp_b", args + " --seed 12");
  auto a = load_two_threads(pa), b = load_two_threads(pb);
  Observer obs(a, quiet(), b);
  SummaryEvent s;
  const auto toks = tokens_of(obs, kText, s);
  std::vector<Token> ids = a->tokenize(kText, true, false);
  ASSERT_EQ(toks.size() + 1, ids.size());
  const std::size_t nv = a->info().n_vocab;
  const std::vector<float> ra = reference_logits(pa, ids, "cmp_a");
  const std::vector<float> rb = reference_logits(pb, ids, "cmp_b");
  double worst = 0, sum_kl = 0, sum_x = 0, sum_s = 0;
  for (std::size_t k = 0; k < toks.size(); ++k) {
    const float* p = ra.data() + k * nv;
    const float* q = rb.data() + k * nv;
    long double pm = p[0], qm = q[0], amax = 0;
    for (std::size_t v = 0; v < nv; ++v) {
      pm = std::max<long double>(pm, p[v]);
      qm = std::max<long double>(qm, q[v]);
      amax = std::max<long double>(amax, std::max(std::fabs(p[v]), std::fabs(q[v])));
    }
    long double pz = 0, qz = 0;
    for (std::size_t v = 0; v < nv; ++v) {
      pz += std::exp(p[v] - pm);
      qz += std::exp(q[v] - qm);
    }
    long double kl = 0, x = 0;
    for (std::size_t v = 0; v < nv; ++v) {
      const long double lp = p[v] - pm - std::log(pz), lq = q[v] - qm - std::log(qz);
      kl += std::exp(lp) * (lp - lq);
      x -= std::exp(lp) * lq;
    }
    const double kl_bits = static_cast<double>(kl / std::numbers::ln2);
    const double x_bits = static_cast<double>(x / std::numbers::ln2);
    // Our F32 logits are within 1e-4 of the reference's relative to the row's
    // largest |logit| (reference_test); a log-softmax moves by at most twice a
    // logit's error, so KL and cross-entropy by at most 4 such errors (nats).
    const double tol = 4 * 1e-4 * static_cast<double>(amax) / std::numbers::ln2;
    EXPECT_NEAR(toks[k].kl_bits, kl_bits, tol) << k;
    EXPECT_NEAR(toks[k].xent_bits, x_bits, tol) << k;
    worst = std::max(worst, std::fabs(toks[k].kl_bits - kl_bits));
    sum_kl += toks[k].kl_bits;
    sum_x += toks[k].xent_bits;
    sum_s += toks[k].surprisal_bits;
  }
  std::printf("[ compare ] mean KL %.6f bits, worst |ours - numpy| %.3g bits, Binoculars %.4f\n",
              s.mean_kl_bits, worst, s.binoculars);
  EXPECT_GT(s.mean_kl_bits, 0.01) << "two random models disagree";
  EXPECT_NEAR(s.mean_kl_bits, sum_kl / static_cast<double>(toks.size()), 1e-12);
  EXPECT_NEAR(s.binoculars, sum_s / sum_x, 1e-12);
  // The last token's windowed score covers min(64, all) tokens: here all.
  EXPECT_NEAR(toks.back().binoculars, sum_s / sum_x, 1e-9);
}

TEST(FirstToken, WithoutBosItHasNoPrediction) {
  const std::string path =
      generate_model("obs_nobos",
                     "--dim 48 --layers 2 --heads 3 --ffn 100 --vocab 300 --dtype F32 "
                     "--seed 31 --set tokenizer.ggml.add_bos_token=false");
  auto m = load_two_threads(path);
  ASSERT_EQ(m->tokenize("a", true, false), m->tokenize("a", false, false)) << "no BOS added";
  Observer obs(m, quiet());
  SummaryEvent s;
  const auto toks = tokens_of(obs, kText, s);
  const std::vector<Token> ids = m->tokenize(kText, false, false);
  ASSERT_EQ(toks.size(), ids.size());
  EXPECT_FALSE(toks[0].predicted);
  EXPECT_TRUE(std::isnan(toks[0].surprisal_bits));
  EXPECT_EQ(toks[0].rank, 0u);
  EXPECT_TRUE(toks[0].top.empty());
  EXPECT_EQ(s.scored, s.tokens - 1);
  // Token 1 is predicted from token 0 alone (numpy's row 0).
  const std::vector<float> ref = reference_logits(path, ids, "obs_nobos");
  const std::size_t nv = m->info().n_vocab;
  double mx = ref[0], z = 0, amax = 0;
  for (std::size_t v = 0; v < nv; ++v) mx = std::max<double>(mx, ref[v]);
  for (std::size_t v = 0; v < nv; ++v) {
    z += std::exp(ref[v] - mx);
    amax = std::max<double>(amax, std::fabs(ref[v]));
  }
  const double bits =
      (std::log(z) + mx - ref[static_cast<std::size_t>(ids[1])]) / std::numbers::ln2;
  ASSERT_TRUE(toks[1].predicted);
  EXPECT_NEAR(toks[1].surprisal_bits, bits, 2e-4 * amax / std::numbers::ln2);
}

TEST(Compare, RefusesAnotherVocabulary) {
  auto kjv = load_two_threads(std::string(SEAM_SOURCE_DIR) + "/models/seam-kjv.gguf");
  EXPECT_THROW({ Observer bad(stories(), quiet(), kjv); }, Error);
}

}  // namespace
}  // namespace seam
