// Hugging Face directories with RoPE scaling and windows: phi3 LongRoPE
// (Phi3ForCausalLM, fused qkv_proj / gate_up_proj, partial rotary), YaRN
// rope_scaling, MistralForCausalLM's sliding_window, and Ministral3ForCausalLM. The directory must
// agree bitwise with its conversion (tools/hf.py convert writes what
// llama.cpp's converters write) where the conversion keeps the option, and
// with tools/reference.py at every position of a prompt longer than the
// original context / the window.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "python_tools.h"
#include "seam/model.h"
#include "seam/session.h"
#include "test_model.h"

namespace seam {
namespace {

using namespace seam::testing;

struct HfCase {
  std::string name;
  std::string hf_args;   // tools/hf.py gen
  std::string ref_args;  // reference.py gen of the same model as the file states it
  bool same_as_conversion;
  std::uint32_t n_ctx;
  int n_tokens;
};

std::string hf_py() { return std::string(SEAM_SOURCE_DIR) + "/tools/hf.py"; }

std::vector<float> flat_logits(const Model& m, const std::vector<Token>& ids, std::uint32_t n_ctx) {
  auto s = m.session(exact_config(n_ctx, 7));
  std::vector<float> out;
  for (const auto& row : decode_all(*s, ids, 0)) out.insert(out.end(), row.begin(), row.end());
  return out;
}

class HfScaling : public ::testing::TestWithParam<HfCase> {};

TEST_P(HfScaling, DirectoryMatchesConversionAndReference) {
  const HfCase& c = GetParam();
  const std::string dir = scratch_dir() + "/hfs_" + c.name;
  const std::string conv = dir + ".gguf";
  if (!std::filesystem::exists(conv)) {
    const std::string tdir = testing::private_tmp(dir), tconv = testing::private_tmp(conv);
    run_command(std::string(SEAM_PYTHON) + " " + hf_py() + " gen --out " + tdir + " --gguf " +
                tconv + " " + c.hf_args + " && " + testing::publish(tdir, dir) + " && " +
                testing::publish(tconv, conv));
  }
  const auto hf = load_two_threads(dir);
  const auto gg = load_two_threads(conv);
  const std::size_t nv = hf->info().n_vocab;
  const std::vector<Token> ids = random_prompt(nv, static_cast<std::size_t>(c.n_tokens), 5);

  const std::vector<float> a = flat_logits(*hf, ids, c.n_ctx);
  const std::vector<float> b = flat_logits(*gg, ids, c.n_ctx);
  ASSERT_EQ(a.size(), b.size());
  if (c.same_as_conversion) {
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
        << c.name << ": the directory and its conversion differ";
  } else {
    // llama.cpp's converter drops the option, so the two must differ (past it).
    EXPECT_GT(worst_rel(a, b, nv), 1e-3) << c.name << ": the directory's option had no effect";
  }
  const std::string ref_model = generate_model("hfs_ref_" + c.name, c.ref_args);
  const std::string out = scratch_dir() + "/hfs_" + c.name + ".logits.f32";
  run_command(std::string(SEAM_PYTHON) + " " + reference_py() + " logits " + ref_model +
              " --tokens " + join_ids(ids) + " --out " + out + " --n-ctx " +
              std::to_string(c.n_ctx));
  const std::vector<float> ref = read_f32_file(out);
  ASSERT_EQ(ref.size(), a.size());
  const double worst = worst_rel(a, ref, nv);
  EXPECT_LT(worst, kExactTol) << c.name;
  std::printf("[ %s ] HF directory vs reference: worst relative logit difference %.3g\n",
              c.name.c_str(), worst);
}

const std::string kPhi3 =
    "--arch phi3 --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 96 --rope-dim 8 --ctx 256 "
    "--orig-ctx 32 --longrope --seed 41";
const std::string kMistral =
    "--dim 48 --layers 2 --heads 3 --kv-heads 1 --ffn 96 --window 6 --seed 42";
const std::string kYarn =
    "--arch qwen2 --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 96 --yarn 4 --orig-ctx 16 "
    "--yarn-beta-fast 16 --yarn-attn-factor 1.2 --seed 43";

const std::string kMinistral3 =
    "--arch mistral3 --dim 64 --layers 2 --heads 4 --kv-heads 2 --head-dim 32 --ffn 96 --yarn 8 "
    "--orig-ctx 8 --yarn-log-mul 1 --attn-temp-scale 0.1 --seed 44";

INSTANTIATE_TEST_SUITE_P(
    Hf, HfScaling,
    ::testing::Values(
        // Phi-3-mini-128k layout: short factors in a 32-cell session, long ones in 64.
        HfCase{"phi3_longrope_short", kPhi3, kPhi3, true, 32, 30},
        HfCase{"phi3_longrope_long", kPhi3, kPhi3, true, 64, 40},
        // Mistral 7B v0.1: config.json's sliding_window applies on every layer; the
        // llama.cpp-style conversion has no window, so it must differ past 6 tokens.
        HfCase{"mistral_window", kMistral + " --hf-arch MistralForCausalLM",
               "--arch llama " + kMistral, false, 64, 24},
        HfCase{"qwen2_yarn", kYarn, kYarn, true, 64, 40},
        // Ministral3ForCausalLM: rope_parameters (rope_theta inside), YaRN with
        // mscale = mscale_all_dim = 1, llama_4_scaling_beta over an original context of 8.
        HfCase{"ministral3_yarn_temp", kMinistral3, kMinistral3, true, 64, 40}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace seam
