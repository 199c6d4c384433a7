// Each sampler stage's exact effect on fixed logits, the seeded draw's
// distribution, determinism and validation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "seam/error.h"
#include "seam/generate.h"

namespace seam {
namespace {

// A config with every stage neutral, so a test turns on just one.
SamplerConfig neutral() {
  SamplerConfig c;
  c.temperature = 1.0f;
  c.top_k = 0;
  c.top_p = 1.0f;
  c.min_p = 0.0f;
  c.typical_p = 1.0f;
  c.repeat_penalty = 1.0f;
  c.repeat_last_n = 64;
  c.frequency_penalty = 0.0f;
  c.presence_penalty = 0.0f;
  return c;
}

std::vector<Token> ids_of(const std::vector<Candidate>& c) {
  std::vector<Token> out;
  for (const auto& x : c) out.push_back(x.id);
  return out;
}

std::map<Token, float> logits_of(const std::vector<Candidate>& c) {
  std::map<Token, float> out;
  for (const auto& x : c) out[x.id] = x.logit;
  return out;
}

// logits whose softmax is {0.5, 0.25, 0.125, 0.125}, shifted so the shift matters not
std::vector<float> quarters() {
  return {std::log(0.5f) + 3, std::log(0.25f) + 3, std::log(0.125f) + 3, std::log(0.125f) + 3};
}

// Full rows (the large-vocabulary path sorts them by radix) come out in
// exactly the comparison order: logit descending, lowest id on ties, -0 and
// +0 equal, -inf last.
TEST(Sampler, FullRowsSortExactlyByLogitThenId) {
  std::mt19937 rng(7);
  for (const std::size_t n : {5u, 2047u, 2048u, 32000u, 151936u}) {
    std::vector<float> l(n);
    std::normal_distribution<float> normal(0.0f, 4.0f);
    for (std::size_t i = 0; i < n; ++i) {
      switch (rng() % 8) {
        case 0:
          l[i] = static_cast<float>(static_cast<int>(rng() % 5) - 2);  // ties
          break;
        case 1:
          l[i] = (rng() % 2) ? 0.0f : -0.0f;
          break;
        case 2:
          l[i] = (rng() % 4) ? -std::numeric_limits<float>::infinity()
                             : std::numeric_limits<float>::denorm_min();
          break;
        default:
          l[i] = normal(rng);
      }
    }
    std::vector<Candidate> want(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = {static_cast<Token>(i), l[i]};
    std::sort(want.begin(), want.end(), [](const Candidate& a, const Candidate& b) {
      return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    });
    const std::vector<Candidate> got = Sampler(neutral()).candidates(l, {});
    ASSERT_EQ(got.size(), n);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(got[i].id, want[i].id) << "n=" << n << " at " << i;
      ASSERT_EQ(got[i].logit, want[i].logit);
    }
  }
}

TEST(Sampler, GreedyIsArgmaxWithLowestIdOnTies) {
  SamplerConfig c = neutral();
  c.temperature = 0;
  Sampler s(c);
  const std::vector<float> l = {1, 3, 3, 2};
  EXPECT_EQ(s.sample(l, {}), 1);
  EXPECT_EQ(argmax(l), 1);
  EXPECT_EQ(ids_of(s.candidates(l, {})), std::vector<Token>{1});
  // A NaN is skipped wherever it stands, as greedy sampling skips it.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> with_nan = {nan, 1, 2};
  EXPECT_EQ(argmax(with_nan), 2);
  EXPECT_EQ(s.sample(with_nan, {}), 2);
  EXPECT_THROW(argmax(std::vector<float>{nan, nan}), Error);
  EXPECT_THROW(argmax(std::span<const float>{}), Error);
}

TEST(Sampler, GreedyStillAppliesBiasAndPenalties) {
  SamplerConfig c = neutral();
  c.temperature = 0;
  c.logit_bias = {{0, 5.0f}};
  EXPECT_EQ(Sampler(c).sample(std::vector<float>{1, 3, 3, 2}, {}), 0);
  c.logit_bias = {{1, -std::numeric_limits<float>::infinity()}};
  EXPECT_EQ(Sampler(c).sample(std::vector<float>{1, 3, 3, 2}, {}), 2);
  c.logit_bias = {};
  c.repeat_penalty = 4.0f;  // token 1: 3 / 4 < 2, token 2: 3 / 4
  const std::vector<Token> hist = {1, 2};
  EXPECT_EQ(Sampler(c).sample(std::vector<float>{1, 3, 3, 2}, hist), 3);
}

TEST(Sampler, LogitBiasAddsExactly) {
  SamplerConfig c = neutral();
  c.order = {SamplerStage::LogitBias};
  c.logit_bias = {{2, 1.5f}, {0, -0.25f}};
  auto got = logits_of(Sampler(c).candidates(std::vector<float>{1, 2, 3, 4}, {}));
  EXPECT_FLOAT_EQ(got[0], 0.75f);
  EXPECT_FLOAT_EQ(got[1], 2.0f);
  EXPECT_FLOAT_EQ(got[2], 4.5f);
  EXPECT_FLOAT_EQ(got[3], 4.0f);
}

TEST(Sampler, PenaltiesFollowTheirFormula) {
  SamplerConfig c = neutral();
  c.order = {SamplerStage::Penalties};
  c.repeat_penalty = 2.0f;
  c.frequency_penalty = 0.5f;
  c.presence_penalty = 0.25f;
  const std::vector<float> l = {2.0f, -1.0f, 0.5f, 1.0f};
  const std::vector<Token> hist = {0, 1, 1, 3};
  auto got = logits_of(Sampler(c).candidates(l, hist));
  EXPECT_FLOAT_EQ(got[0], 2.0f / 2 - 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(got[1], -1.0f * 2 - 2 * 0.5f - 0.25f);  // negative logits are multiplied
  EXPECT_FLOAT_EQ(got[2], 0.5f);                          // not in the window
  EXPECT_FLOAT_EQ(got[3], 1.0f / 2 - 0.5f - 0.25f);
  // Only the last repeat_last_n tokens count.
  c.repeat_last_n = 2;  // window {1, 3}
  got = logits_of(Sampler(c).candidates(l, hist));
  EXPECT_FLOAT_EQ(got[0], 2.0f);
  EXPECT_FLOAT_EQ(got[1], -1.0f * 2 - 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(got[3], 1.0f / 2 - 0.5f - 0.25f);
  c.repeat_last_n = 0;  // off
  got = logits_of(Sampler(c).candidates(l, hist));
  EXPECT_FLOAT_EQ(got[0], 2.0f);
  EXPECT_FLOAT_EQ(got[1], -1.0f);
}

TEST(Sampler, TopKKeepsTheKHighestLowestIdOnTies) {
  SamplerConfig c = neutral();
  c.top_k = 3;
  const std::vector<float> l = {0.1f, 0.9f, 0.3f, 0.7f, 0.5f, 0.2f};
  EXPECT_EQ(ids_of(Sampler(c).candidates(l, {})), (std::vector<Token>{1, 3, 4}));
  c.top_k = 2;
  EXPECT_EQ(ids_of(Sampler(c).candidates(std::vector<float>{5, 5, 5, 1}, {})),
            (std::vector<Token>{0, 1}));
  c.top_k = 100;  // more than the vocabulary: everything
  EXPECT_EQ(Sampler(c).candidates(l, {}).size(), l.size());
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingP) {
  SamplerConfig c = neutral();
  auto kept = [&](float p) {
    c.top_p = p;
    return ids_of(Sampler(c).candidates(quarters(), {}));
  };
  EXPECT_EQ(kept(0.49f), (std::vector<Token>{0}));
  EXPECT_EQ(kept(0.74f), (std::vector<Token>{0, 1}));
  EXPECT_EQ(kept(0.76f), (std::vector<Token>{0, 1, 2}));
  EXPECT_EQ(kept(1.0f).size(), 4u);
}

TEST(Sampler, MinPKeepsTokensAboveAFractionOfTheBest) {
  SamplerConfig c = neutral();
  c.min_p = 0.3f;  // p >= 0.15
  EXPECT_EQ(ids_of(Sampler(c).candidates(quarters(), {})), (std::vector<Token>{0, 1}));
  c.min_p = 0.2f;  // p >= 0.1
  EXPECT_EQ(Sampler(c).candidates(quarters(), {}).size(), 4u);
  c.min_p = 0.6f;  // p >= 0.3
  EXPECT_EQ(ids_of(Sampler(c).candidates(quarters(), {})), (std::vector<Token>{0}));
}

TEST(Sampler, TypicalKeepsTokensNearTheEntropy) {
  // H = 1.75 ln2; surprisals 1, 2, 3, 3 (x ln2): token 1 is the most typical,
  // then token 0. Typical sampling can drop the most likely token.
  SamplerConfig c = neutral();
  c.typical_p = 0.2f;
  EXPECT_EQ(ids_of(Sampler(c).candidates(quarters(), {})), (std::vector<Token>{1}));
  c.typical_p = 0.7f;
  EXPECT_EQ(ids_of(Sampler(c).candidates(quarters(), {})), (std::vector<Token>{0, 1}));
  c.typical_p = 0.9f;
  EXPECT_EQ(Sampler(c).candidates(quarters(), {}).size(), 4u);
}

TEST(Sampler, TemperatureDividesLogits) {
  SamplerConfig c = neutral();
  c.temperature = 2.0f;
  auto got = logits_of(Sampler(c).candidates(std::vector<float>{1, -3, 4}, {}));
  EXPECT_FLOAT_EQ(got[0], 0.5f);
  EXPECT_FLOAT_EQ(got[1], -1.5f);
  EXPECT_FLOAT_EQ(got[2], 2.0f);
}

TEST(Sampler, OrderIsConfigurable) {
  SamplerConfig c = neutral();
  c.temperature = 2.0f;
  c.min_p = 0.6f;
  // Default order: min-p sees T=1 probabilities, p1/p0 = 0.5 < 0.6.
  EXPECT_EQ(Sampler(c).candidates(quarters(), {}).size(), 1u);
  // Temperature first flattens them: p1/p0 = sqrt(0.5) >= 0.6, p2/p0 = 0.5 < 0.6.
  c.order = {SamplerStage::Temperature, SamplerStage::MinP};
  EXPECT_EQ(Sampler(c).candidates(quarters(), {}).size(), 2u);
  // A stage left out does nothing.
  c.order = {SamplerStage::Temperature};
  EXPECT_EQ(Sampler(c).candidates(quarters(), {}).size(), 4u);
}

// Pearson's chi-square of `n` draws against the softmax of `logits`.
double chi_square(Sampler& s, const std::vector<float>& logits, const std::vector<double>& expect,
                  int n) {
  std::vector<int> count(logits.size());
  for (int i = 0; i < n; ++i) ++count[static_cast<std::size_t>(s.sample(logits, {}))];
  double chi = 0;
  for (std::size_t i = 0; i < expect.size(); ++i) {
    if (expect[i] == 0) {
      EXPECT_EQ(count[i], 0) << "token " << i << " was cut but drawn";
      continue;
    }
    const double e = expect[i] * n;
    chi += (count[i] - e) * (count[i] - e) / e;
  }
  return chi;
}

TEST(Sampler, DrawFollowsTheDistribution) {
  const std::vector<float> l = {std::log(0.4f), std::log(0.3f), std::log(0.2f), std::log(0.1f)};
  SamplerConfig c = neutral();
  c.seed = 1234;
  Sampler s(c);
  // df = 3, p = 0.001 -> 16.266
  EXPECT_LT(chi_square(s, l, {0.4, 0.3, 0.2, 0.1}, 20000), 16.266);
  // Truncated to the top 2 and renormalised: df = 1, p = 0.001 -> 10.828
  c.top_k = 2;
  Sampler s2(c);
  EXPECT_LT(chi_square(s2, l, {4.0 / 7, 3.0 / 7, 0, 0}, 20000), 10.828);
  // Temperature 0.5 squares the probabilities: {16, 9, 4, 1} / 30; df = 3
  c.top_k = 0;
  c.temperature = 0.5f;
  Sampler s3(c);
  EXPECT_LT(chi_square(s3, l, {16.0 / 30, 9.0 / 30, 4.0 / 30, 1.0 / 30}, 20000), 16.266);
}

TEST(Sampler, TheChiSquareCheckCanFail) {
  // A wrong expectation must be rejected, or the test above proves nothing.
  const std::vector<float> l = {std::log(0.4f), std::log(0.3f), std::log(0.2f), std::log(0.1f)};
  SamplerConfig c = neutral();
  c.seed = 1234;
  Sampler s(c);
  EXPECT_GT(chi_square(s, l, {0.37, 0.33, 0.2, 0.1}, 20000), 16.266);
}

TEST(Sampler, SameSeedSameTokens) {
  std::mt19937 gen(7);
  std::normal_distribution<float> nd(0, 2);
  std::vector<std::vector<float>> rows(200, std::vector<float>(50));
  for (auto& r : rows)
    for (float& x : r) x = nd(gen);
  SamplerConfig c;  // the defaults, with penalties on
  c.repeat_penalty = 1.1f;
  c.seed = 42;
  auto run = [&](std::uint64_t seed) {
    c.seed = seed;
    Sampler s(c);
    std::vector<Token> out;
    for (const auto& r : rows) out.push_back(s.sample(r, out));
    return out;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

TEST(Sampler, RejectsNonsense) {
  auto rejects = [](auto mutate) {
    SamplerConfig c;
    mutate(c);
    try {
      validate(c, 10);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::InvalidArgument);
      return true;
    }
    return false;
  };
  EXPECT_TRUE(rejects([](SamplerConfig& c) { c.temperature = -0.1f; }));
  EXPECT_TRUE(rejects([](SamplerConfig& c) { c.temperature = NAN; }));
  EXPECT_TRUE(rejects([](SamplerConfig& c) { c.top_k = -1; }));
  EXPECT_TRUE(rejects([](SamplerConfig& c) { c.top_p = 0.0f; }));
  EXPECT_TRUE(rejects([](SamplerConfig& c) { c.top_p = 1.01f; }));
  EXPECT_TRUE(rejects([](SamplerConfig& c) { c.min_p = -0.01f; }));
  EXPECT_TRUE(rejects([](SamplerConfig& c) { c.min_p = 1.5f; }));
  EXPECT_TRUE(rejects([](SamplerConfig& c) { c.typical_p = 0.0f; }));
  EXPECT_TRUE(rejects([](SamplerConfig& c) { c.repeat_penalty = 0.0f; }));
  EXPECT_TRUE(rejects([](SamplerConfig& c) { c.repeat_last_n = -2; }));
  EXPECT_TRUE(rejects([](SamplerConfig& c) { c.logit_bias = {{10, 1.0f}}; }));
  EXPECT_TRUE(rejects([](SamplerConfig& c) { c.logit_bias = {{-1, 1.0f}}; }));
  EXPECT_TRUE(rejects([](SamplerConfig& c) { c.logit_bias = {{1, NAN}}; }));
  EXPECT_TRUE(rejects([](SamplerConfig& c) {
    c.order = {SamplerStage::TopK, SamplerStage::TopK};
  }));
  EXPECT_TRUE(rejects([](SamplerConfig& c) {
    c.order = {SamplerStage::TopP, SamplerStage::Penalties};
  }));
  EXPECT_FALSE(rejects([](SamplerConfig&) {}));
  EXPECT_FALSE(rejects([](SamplerConfig& c) {
    c.temperature = 0;
    c.top_p = 1;
    c.logit_bias = {{9, -std::numeric_limits<float>::infinity()}};
  }));
}

TEST(Sampler, BanningEverythingIsAnError) {
  SamplerConfig c = neutral();
  Sampler s(c);
  s.ban({0, 1, 2});
  EXPECT_THROW(s.sample(std::vector<float>{1, 2, 3}, {}), Error);
  Sampler ok(c);
  ok.ban({1, 2});
  EXPECT_EQ(ok.sample(std::vector<float>{1, 9, 9}, {}), 0);
}

TEST(Sampler, StageNamesRoundTrip) {
  for (SamplerStage s : default_sampler_order())
    EXPECT_EQ(parse_sampler_stage(sampler_stage_name(s)), s);
  EXPECT_EQ(parse_sampler_stage("top-k"), SamplerStage::TopK);
  EXPECT_FALSE(parse_sampler_stage("mirostat"));
}

}  // namespace
}  // namespace seam
