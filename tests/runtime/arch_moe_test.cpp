// Mixture-of-experts families against tools/reference.py (float64): qwen3moe,
// Mixtral-style llama and gpt-oss files as tools/families.py writes them
// (router logits spread so top-k choices are far from ties). Every position,
// prefilled in chunks, and a batch that mixes two sequences, so the expert
// grouping spans sequences.
//
// gpt-oss (sinks, q/k/v/o biases, YaRN, window 4 on even layers, router and
// expert biases, clamped SwiGLU, softmax over the selected experts) runs twice:
// with F32 experts (exact weights: kExactTol) and with the MXFP4 experts it
// ships. Those are decoded exactly but multiplied against Q8_0-rounded
// activations (as llama.cpp's CPU kernel does), which moves the logits by
// ~2.4e-2 relative here (up to 1/254 of a block's largest |x| per input, 2
// rounded matmuls per layer, 4 layers); the reference then rounds the same
// inputs the same way (--q8-experts), so only float32 vs float64 remains, plus
// a rare input on a rounding boundary landing one Q8_0 step apart.
#include <gtest/gtest.h>

#include "format/gguf.h"
#include "python_tools.h"
#include "seam/cpu.h"
#include "test_model.h"

namespace seam {
namespace {

using namespace seam::testing;

struct MoeCase {
  std::string name;
  std::string args;
  double tol = kExactTol;
  std::string ref_args;  // reference.py logits options
};

class MoeForward : public ::testing::TestWithParam<MoeCase> {};

TEST_P(MoeForward, LogitsMatchEveryPositionAndMixedBatches) {
  const MoeCase& c = GetParam();
  const std::string path = generate_model("moe_" + c.name, c.args);
  auto model = load_two_threads(path);
  const std::size_t nv = model->info().n_vocab;
  const std::vector<Token> a = random_prompt(nv, 12, 31);
  const std::vector<Token> b = random_prompt(nv, 12, 32);
  const std::vector<float> ref_a = reference_logits(path, a, "moe_" + c.name + "_a", c.ref_args);
  const std::vector<float> ref_b = reference_logits(path, b, "moe_" + c.name + "_b", c.ref_args);
  expect_logits_match(*model, a, ref_a, c.tol, c.name);

  // Each expert's rows come from both sequences.
  expect_mixed_batch_match(*model, a, b, ref_a, ref_b, 8, c.tol, c.name);
}

// gpt-oss's MXFP4 experts are interleaved at AVX2 and AVX-512 like the other
// quantized types (compute/interleave.h), so a sequence's logits are the same
// alone and beside 15 others, its experts' rows grouped with theirs, at the
// machine's level (seam serve's promise, docs/server.md "Batch invariance").
TEST(MoeBatchInvariance, GptOssMxfp4LogitsAloneAreThoseBesideOthers) {
  const std::string path = generate_model("moe_gpt_oss_mxfp4", "--arch gpt-oss");
  LoadOptions lo;
  lo.n_threads = 2;
  for (const char* level : {"scalar", "avx2", "avx512"})
    EXPECT_TRUE(Model::batch_invariant(path, lo, level)) << level;
  if (!Model::batch_invariant(path, lo, cpu_level()))
    GTEST_SKIP() << "not batch-invariant at " << cpu_level() << " (amx)";
  expect_alone_equals_beside_others(*Model::load(path, lo), 6);
}

// seam bench's bandwidth bound divides by the bytes a decoded token reads:
// 3 of a layer's 6 experts, one row of an untied embedding table (the output
// matrix is read whole), every other weight once.
TEST(MoeInfo, DecodeBytesCountTheChosenExpertsAndOneEmbeddingRow) {
  const std::string path =
      generate_model("moe_qwen3moe_top3_of_6", "--arch qwen3moe --experts 6 --experts-used 3");
  const GgufFile file = GgufFile::open(path);
  ASSERT_NE(file.find_tensor("output.weight"), nullptr);
  const GgufTensor* embd = file.find_tensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  std::uint64_t experts = 0;
  int n_expert_tensors = 0;
  for (const GgufTensor& t : file.tensors()) {
    if (t.name.ends_with("_exps.weight")) {
      ASSERT_EQ(t.ne.size(), 3u) << t.name;
      ASSERT_EQ(t.ne[2], 6u) << t.name;
      experts += t.nbytes;
      ++n_expert_tensors;
    }
  }
  ASSERT_GT(n_expert_tensors, 0);
  const ModelInfo info = Model::load(path)->info();
  const std::uint64_t embd_row = embd->nbytes / info.n_vocab;
  EXPECT_EQ(info.decode_bytes, info.weight_bytes - experts / 2 - (embd->nbytes - embd_row));

  // A dense model whose output is its embedding reads every weight.
  const ModelInfo tied =
      Model::load(generate_model("info_llama_tied", "--arch llama --tied --layers 2"))->info();
  EXPECT_EQ(tied.decode_bytes, tied.weight_bytes);
}

INSTANTIATE_TEST_SUITE_P(
    Families, MoeForward,
    ::testing::Values(
        MoeCase{"qwen3moe", "--arch qwen3moe", kExactTol, ""},
        MoeCase{"qwen3moe_top3_of_6", "--arch qwen3moe --experts 6 --experts-used 3", kExactTol,
                ""},
        MoeCase{"llama_mixtral", "--arch llama --experts 4 --experts-used 2", kExactTol, ""},
        MoeCase{"gpt_oss_f32_experts", "--arch gpt-oss --expert-type F32", kExactTol, ""},
        MoeCase{"gpt_oss_mxfp4", "--arch gpt-oss", kExactTol, "--q8-experts"}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace seam
