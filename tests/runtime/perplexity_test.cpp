// seam::perplexity's standard error and KL divergence against numpy's logits.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "python_tools.h"
#include "seam/error.h"
#include "seam/perplexity.h"
#include "test_model.h"

namespace seam {
namespace {

using namespace seam::testing;

const char* kText = "the cat sat on a mat and then it ran to the hat of the bat in a vat";

// log-softmax of one row, in long double.
std::vector<long double> log_softmax(const float* row, std::size_t n) {
  long double mx = row[0];
  for (std::size_t v = 0; v < n; ++v) mx = std::max<long double>(mx, row[v]);
  long double z = 0;
  for (std::size_t v = 0; v < n; ++v) z += std::exp(row[v] - mx);
  std::vector<long double> out(n);
  for (std::size_t v = 0; v < n; ++v) out[v] = row[v] - mx - std::log(z);
  return out;
}

TEST(Perplexity, StandardErrorAndKlMatchNumpy) {
  const std::string args = "--dim 48 --layers 2 --heads 3 --ffn 100 --vocab 300 --dtype F32";
  const std::string pa = generate_model("ppl_a", args + " --seed 21");
  const std::string pb = generate_model("ppl_b", args + " --seed 22");
  auto a = load_two_threads(pa), b = load_two_threads(pb);
  const std::vector<Token> text = a->tokenize(kText, true, false);
  PerplexityOptions po;
  po.compare = b.get();
  std::size_t calls = 0;
  po.cache_type = CacheType::F32;  // the numpy figures below see K and V unrounded
  po.on_window = [&](std::size_t done, std::size_t total, double) {
    ++calls;
    EXPECT_EQ(done, calls);
    EXPECT_EQ(total, 1u);
  };
  const PerplexityResult r = perplexity(*a, kText, po);
  ASSERT_EQ(r.n_windows, 1u);  // the text is shorter than a window: one window of its length
  EXPECT_EQ(calls, 1u);
  // The window as perplexity() decodes it, as llama.cpp does: the text after
  // the BOS its tokenization adds.
  ASSERT_EQ(text.front(), *a->bos());
  const std::vector<Token>& ids = text;
  const std::size_t nv = a->info().n_vocab, n = ids.size();
  const std::vector<float> ra = reference_logits(pa, ids, "ppl_a");
  const std::vector<float> rb = reference_logits(pb, ids, "ppl_b");
  std::vector<long double> nll, kl;
  long double amax = 0;
  for (std::size_t j = n / 2; j + 1 < n; ++j) {
    const auto lp = log_softmax(ra.data() + j * nv, nv);
    const auto lq = log_softmax(rb.data() + j * nv, nv);
    nll.push_back(-lp[static_cast<std::size_t>(ids[j + 1])]);
    long double d = 0;
    for (std::size_t v = 0; v < nv; ++v) {
      d += std::exp(lp[v]) * (lp[v] - lq[v]);
      amax = std::max<long double>(amax,
                                   std::max(std::fabs(ra[j * nv + v]), std::fabs(rb[j * nv + v])));
    }
    kl.push_back(d);
  }
  ASSERT_EQ(r.n_scored, nll.size());
  auto mean_se = [](const std::vector<long double>& x) {
    long double m = 0;
    for (auto v : x) m += v;
    m /= x.size();
    long double ss = 0;
    for (auto v : x) ss += (v - m) * (v - m);
    return std::pair<double, double>(
        static_cast<double>(m), static_cast<double>(std::sqrt(ss / (x.size() - 1) / x.size())));
  };
  const auto [nll_m, nll_se] = mean_se(nll);
  const auto [kl_m, kl_se] = mean_se(kl);
  // Our F32 logits are within 1e-4 of numpy's relative to the largest |logit|
  // (reference_test); an NLL or a KL term moves by at most 4 such errors.
  const double tol = 4e-4 * static_cast<double>(amax);
  std::printf(
      "[ perplexity ] nll %.6f +/- %.6f (numpy %.6f +/- %.6f), KL %.6f +/- %.6f (numpy "
      "%.6f +/- %.6f), tolerance %.2g\n",
      r.nll_per_token, r.nll_stderr, nll_m, nll_se, r.kl_mean, r.kl_stderr, kl_m, kl_se, tol);
  EXPECT_NEAR(r.nll_per_token, nll_m, tol);
  EXPECT_NEAR(r.nll_stderr, nll_se, tol);
  EXPECT_NEAR(r.ppl_stderr, r.ppl * r.nll_stderr, 1e-12 * r.ppl);
  EXPECT_NEAR(r.kl_mean, kl_m, tol);
  EXPECT_NEAR(r.kl_stderr, kl_se, tol);
  EXPECT_GT(r.kl_stderr, 0.0);
}

TEST(Perplexity, SameModelTwiceHasNoDivergence) {
  auto m = stories();
  PerplexityOptions po;
  po.compare = m.get();
  const PerplexityResult r =
      perplexity(*m, "Once upon a time there was a little girl named Lily. She liked to play.", po);
  EXPECT_EQ(r.kl_mean, 0.0);
  EXPECT_EQ(r.kl_stderr, 0.0);
  EXPECT_GT(r.nll_stderr, 0.0);
}

TEST(Perplexity, RefusesACompareModelWithAnotherVocabulary) {
  auto kjv = load_two_threads(std::string(SEAM_SOURCE_DIR) + "/models/seam-kjv.gguf");
  PerplexityOptions po;
  po.compare = kjv.get();
  EXPECT_THROW(perplexity(*stories(), "Once upon a time there was a girl.", po), Error);
}

}  // namespace
}  // namespace seam
