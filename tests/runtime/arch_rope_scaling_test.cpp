// RoPE scaling variants, sliding windows on llama and the mistral3 recipe
// against tools/reference.py at every position: YaRN beyond the original
// context, phi3 LongRoPE with both the short and the long factors (chosen by
// the session's n_ctx), Mistral-style windows on every layer of a llama, and
// Llama 4 attention temperature. Each case also checks that the option moves
// the reference logits, so a build that ignored it could not pass.
#include <gtest/gtest.h>

#include "python_tools.h"
#include "test_model.h"

namespace seam {
namespace {

using namespace seam::testing;

struct ScalingCase {
  std::string name;
  std::string args;     // reference.py gen arguments
  std::string plain;    // the same model without the option under test
  std::uint32_t n_ctx;  // session context (LongRoPE's long/short choice)
  int n_tokens;         // prompt length: past the original context / the window
  double tol;           // max |ours - ref| / max |ref| per row
};

std::vector<float> ref_logits_ctx(const std::string& model, const std::vector<Token>& ids,
                                  const std::string& tag, std::uint32_t n_ctx) {
  const std::string out = scratch_dir() + "/" + tag + ".logits.f32";
  run_command(std::string(SEAM_PYTHON) + " " + reference_py() + " logits " + model + " --tokens " +
              join_ids(ids) + " --out " + out + " --n-ctx " + std::to_string(n_ctx));
  return read_f32_file(out);
}

class RopeScaling : public ::testing::TestWithParam<ScalingCase> {};

TEST_P(RopeScaling, LogitsMatchEveryPosition) {
  const ScalingCase& c = GetParam();
  const std::string path = generate_model("scaling_" + c.name, c.args);
  auto model = load_two_threads(path);
  const std::size_t nv = model->info().n_vocab;
  const std::vector<Token> ids = random_prompt(nv, static_cast<std::size_t>(c.n_tokens), 11);
  const std::vector<float> ref = ref_logits_ctx(path, ids, "scaling_" + c.name, c.n_ctx);
  ASSERT_EQ(ref.size(), ids.size() * nv);

  // Prefill in chunks of 5 through the KV cache, as the other reference tests do.
  auto s = model->session({c.n_ctx, 5, 1, CacheType::F32});
  auto got = decode_all(*s, ids, 0);
  double worst = 0;
  for (std::size_t t = 0; t < ids.size(); ++t) {
    const double r = rel_diff(got[t], std::span<const float>(ref).subspan(t * nv, nv));
    worst = std::max(worst, r);
    EXPECT_LT(r, c.tol) << c.name << " position " << t;
  }
  std::printf("[ %s ] worst relative logit difference %.3g (tolerance %.3g)\n", c.name.c_str(),
              worst, c.tol);

  // The option under test must move the logits far more than our error, or the
  // match proves nothing.
  const std::string plain = generate_model("scaling_plain_" + c.name, c.plain);
  const std::vector<float> ref_plain =
      ref_logits_ctx(plain, ids, "scaling_plain_" + c.name, c.n_ctx);
  const double effect = worst_rel(ref, ref_plain, nv);
  EXPECT_GT(effect, std::max(10 * worst, 1e-3)) << c.name << ": the option barely matters";
  std::printf("[ %s ] the option moves the reference logits by %.3g\n", c.name.c_str(), effect);
}

const std::string kQwen2 =
    "--arch qwen2 --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 96 --seed 31";
const std::string kLlama =
    "--arch llama --dim 48 --layers 2 --heads 3 --kv-heads 1 --ffn 96 --seed 32";
const std::string kQwen3 =
    "--arch qwen3 --dim 48 --layers 2 --heads 4 --kv-heads 2 --head-dim 16 --ffn 96 --seed 33";
const std::string kGemma3 =
    "--arch gemma3 --dim 32 --layers 6 --heads 2 --kv-heads 1 --head-dim 16 --ffn 64 --tied "
    "--window 5 --rope-theta 1000000 --seed 34";
const std::string kPhi3 =
    "--arch phi3 --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 96 --rope-dim 8 --ctx 256 "
    "--seed 35";
const std::string kPhi3Full = "--arch phi3 --dim 64 --layers 2 --heads 4 --ffn 96 --seed 36";
const std::string kMistral3 =
    "--arch mistral3 --dim 64 --layers 2 --heads 4 --kv-heads 2 --head-dim 32 --ffn 96 --seed 37";

INSTANTIATE_TEST_SUITE_P(
    Scaling, RopeScaling,
    ::testing::Values(
        // Qwen2.5-style YaRN (factor 4, default betas and 0.1 ln s + 1), 40 tokens over an
        // original context of 16.
        ScalingCase{"qwen2_yarn", kQwen2 + " --yarn 4 --orig-ctx 16", kQwen2, 64, 40, 1e-4},
        ScalingCase{"qwen2_yarn_q8_0", kQwen2 + " --yarn 4 --orig-ctx 16 --dtype Q8_0",
                    kQwen2 + " --dtype Q8_0", 64, 40, 2e-2},
        // Explicit betas and attention factor, and rope.scaling.attn_factor on top.
        ScalingCase{"llama_yarn_betas",
                    kLlama + " --yarn 8 --orig-ctx 12 --yarn-beta-fast 16 --yarn-beta-slow 2 "
                             "--yarn-attn-factor 1.3 --rope-attn-factor 0.9",
                    kLlama, 64, 36, 1e-4},
        ScalingCase{"qwen3_yarn_log_mul",
                    kQwen3 + " --yarn 16 --orig-ctx 8 --yarn-log-mul 0.5 --rope-theta 1000000",
                    kQwen3 + " --rope-theta 1000000", 64, 30, 1e-4},
        // YaRN on gemma3's global layer only; local layers stay unscaled.
        ScalingCase{"gemma3_yarn_global", kGemma3 + " --yarn 4 --orig-ctx 8", kGemma3, 64, 30,
                    1e-4},
        ScalingCase{"phi3_yarn_partial", kPhi3 + " --yarn 4 --orig-ctx 16", kPhi3, 64, 36, 1e-4},
        // LongRoPE: n_ctx 32 <= original 32 -> short factors; 64 > 32 -> long factors.
        // Both carry the converter's attention factor sqrt(1 + ln 8 / ln 32).
        ScalingCase{"phi3_longrope_short", kPhi3 + " --longrope --orig-ctx 32", kPhi3, 32, 30,
                    1e-4},
        ScalingCase{"phi3_longrope_long", kPhi3 + " --longrope --orig-ctx 32", kPhi3, 64, 40, 1e-4},
        ScalingCase{"phi3_longrope_full_rot", kPhi3Full + " --longrope --orig-ctx 16 --ctx 64",
                    kPhi3Full + " --ctx 64", 64, 24, 1e-4},
        ScalingCase{"phi3_longrope_q8_0",
                    "--arch phi3 --dim 64 --layers 2 --heads 2 --ffn 128 --longrope --orig-ctx 32 "
                    "--dtype Q8_0 --seed 38",
                    "--arch phi3 --dim 64 --layers 2 --heads 2 --ffn 128 --dtype Q8_0 --seed 38",
                    64, 40, 2e-2},
        // Mistral 7B v0.1: a llama whose file states a window applies it on every layer.
        ScalingCase{"llama_window", kLlama + " --window 6", kLlama, 64, 24, 1e-4},
        // Ministral 3: YaRN with mscale_all_dim 1 (attention factor 1) and Llama 4
        // attention temperature over an original context of 8.
        ScalingCase{"mistral3_yarn_temp",
                    kMistral3 + " --yarn 8 --orig-ctx 8 --yarn-log-mul 1 --attn-temp-scale 0.1",
                    kMistral3, 64, 40, 1e-4},
        ScalingCase{"mistral3_temp_only", kMistral3 + " --orig-ctx 6 --attn-temp-scale 0.5",
                    kMistral3, 64, 30, 1e-4}),
    [](const auto& info) { return info.param.name; });

// The long/short choice is the session's: the same file and prompt give the
// short-factor logits in a small context and the long-factor ones in a large one.
TEST(RopeScalingChoice, LongRopeFollowsSessionContext) {
  const std::string path =
      generate_model("scaling_phi3_longrope_choice", kPhi3 + " --longrope --orig-ctx 32");
  auto model = load_two_threads(path);
  const std::size_t nv = model->info().n_vocab;
  const std::vector<Token> ids = {1, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50};
  const auto short_ref = ref_logits_ctx(path, ids, "scaling_choice_short", 32);
  const auto long_ref = ref_logits_ctx(path, ids, "scaling_choice_long", 33);
  ASSERT_GT(worst_rel(short_ref, long_ref, nv), 1e-3);
  for (const auto& [n_ctx, ref] : {std::pair{32u, &short_ref}, std::pair{33u, &long_ref}}) {
    auto s = model->session({n_ctx, 16, 1, CacheType::F32});
    auto got = decode_all(*s, ids, 0);
    std::vector<float> flat;
    for (const auto& row : got) flat.insert(flat.end(), row.begin(), row.end());
    EXPECT_LT(worst_rel(flat, *ref, nv), 1e-4) << "n_ctx " << n_ctx;
  }
}

}  // namespace
}  // namespace seam
