// Mixture-of-experts families against tools/reference.py (float64): qwen3moe
// and Mixtral-style llama files as tools/families.py writes them (router logits
// spread so top-k choices are far from ties). Every position, prefilled in
// chunks, and a batch that mixes two sequences, so the expert grouping spans
// sequences.
#include <gtest/gtest.h>

#include "python_tools.h"
#include "test_model.h"

namespace seam {
namespace {

using namespace seam::testing;

struct MoeCase {
  std::string name;
  std::string args;
};

class MoeForward : public ::testing::TestWithParam<MoeCase> {};

TEST_P(MoeForward, LogitsMatchEveryPositionAndMixedBatches) {
  const MoeCase& c = GetParam();
  const std::string path = generate_model("moe_" + c.name, c.args);
  auto model = load_two_threads(path);
  const std::size_t nv = model->info().n_vocab;
  const std::vector<Token> a = random_prompt(nv, 12, 31);
  const std::vector<Token> b = random_prompt(nv, 12, 32);
  const std::vector<float> ref_a = reference_logits(path, a, "moe_" + c.name + "_a");
  const std::vector<float> ref_b = reference_logits(path, b, "moe_" + c.name + "_b");
  expect_logits_match(*model, a, ref_a, kExactTol, c.name);

  // Both sequences in every batch, interleaved: each expert's rows come from both.
  auto s = model->session(exact_config(64, 8, 2));
  std::vector<Decode> batch;
  for (std::size_t i = 0; i < a.size(); ++i) {
    batch.push_back({a[i], static_cast<std::int32_t>(i), 0, true});
    batch.push_back({b[i], static_cast<std::int32_t>(i), 1, true});
  }
  s->decode(batch);
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double ra = rel_diff(s->logits(2 * i), std::span(ref_a).subspan(i * nv, nv));
    const double rb = rel_diff(s->logits(2 * i + 1), std::span(ref_b).subspan(i * nv, nv));
    EXPECT_LT(ra, kExactTol) << c.name << " mixed batch, sequence 0 position " << i;
    EXPECT_LT(rb, kExactTol) << c.name << " mixed batch, sequence 1 position " << i;
    worst = std::max({worst, ra, rb});
  }
  std::printf("[ %s ] mixed batch worst relative logit difference %.3g\n", c.name.c_str(), worst);
}

INSTANTIATE_TEST_SUITE_P(
    Families, MoeForward,
    ::testing::Values(MoeCase{"qwen3moe", "--arch qwen3moe"},
                      MoeCase{"qwen3moe_top3_of_6", "--arch qwen3moe --experts 6 --experts-used 3"},
                      MoeCase{"llama_mixtral", "--arch llama --experts 4 --experts-used 2"}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace seam
