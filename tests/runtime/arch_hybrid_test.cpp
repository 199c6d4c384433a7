// Gated-delta-net hybrids (qwen35, qwen35moe, qwen3next) as tools/families.py
// writes them: layers 0-2 gated delta net, layer 3 gated attention with partial
// RoPE, 2 k-heads and 4 v-heads (so the tiled and grouped v-head maps differ),
// the MoE files with a shared expert. Against tools/reference.py (float64) at
// every position, prefilled in chunks and in a batch that mixes two sequences;
// and against llama.cpp (greedy ids and every step's logits).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "format/gguf.h"
#include "llamacpp_compare.h"
#include "python_tools.h"
#include "seam/cpu.h"
#include "seam/quantize.h"
#include "test_model.h"

namespace seam {
namespace {

using namespace seam::testing;

struct HybridCase {
  std::string name;
  std::string args;
};

void PrintTo(const HybridCase& c, std::ostream* os) { *os << c.name; }

class HybridForward : public ::testing::TestWithParam<HybridCase> {};

TEST_P(HybridForward, AdmittedWithTheirLayerKinds) {
  const HybridCase& c = GetParam();
  const std::string path = generate_model("hybrid_" + c.name, c.args);
  const Admission a = Model::admit(path);
  EXPECT_TRUE(a.ok) << a.reason;
  EXPECT_EQ(load_two_threads(path)->info().n_layer, 4u);
}

TEST_P(HybridForward, LogitsMatchEveryPositionAndMixedBatches) {
  const HybridCase& c = GetParam();
  const std::string path = generate_model("hybrid_" + c.name, c.args);
  auto model = load_two_threads(path);
  const std::size_t nv = model->info().n_vocab;
  const std::vector<Token> a = random_prompt(nv, 14, 41);
  const std::vector<Token> b = random_prompt(nv, 14, 42);
  const std::vector<float> ref_a = reference_logits(path, a, "hybrid_" + c.name + "_a");
  const std::vector<float> ref_b = reference_logits(path, b, "hybrid_" + c.name + "_b");
  // In chunks of 5: the conv window and the delta-rule state carry across calls.
  expect_logits_match(*model, a, ref_a, kExactTol, c.name);

  // Each recurrent layer folds three tokens of each sequence per call.
  expect_mixed_batch_match(*model, a, b, ref_a, ref_b, 6, kExactTol, c.name);
}

TEST_P(HybridForward, GreedyIdsMatchLlamaCpp) {
  const std::string tool = peer_logits_tool();
  SEAM_NEED_PEER(tool);
  const HybridCase& c = GetParam();
  const std::string path = generate_model("hybrid_" + c.name, c.args);
  const std::vector<Token> prompt = random_prompt(320, 12, 5);
  const PeerComparison r = compare_with_llamacpp(path, prompt, 8);
  std::printf(
      "[ %s ] llama.cpp vs seam: worst relative logit difference %.3g, smallest top-1 "
      "margin %.3g\n",
      c.name.c_str(), r.worst_rel, r.min_peer_margin);
  EXPECT_EQ(r.seam_ids, r.peer_ids) << c.name;
  // llama.cpp keeps K and V in F16 and rounds activations to F16 in places:
  // the attention-family bound (kPeerExactTol) covers it.
  EXPECT_LT(r.worst_rel, kPeerExactTol) << c.name;
}

// qwen35_mtp: the qwen35 file with a multi-token-prediction block appended as
// llama.cpp's converter writes it (block_count 5, nextn_predict_layers 1,
// blk.4.nextn.*); both engines run only the first four layers.
INSTANTIATE_TEST_SUITE_P(Families, HybridForward,
                         ::testing::Values(HybridCase{"qwen35", "--arch qwen35"},
                                           HybridCase{"qwen35moe", "--arch qwen35moe"},
                                           HybridCase{"qwen3next", "--arch qwen3next"},
                                           HybridCase{"qwen35_mtp", "--arch qwen35 --mtp 1"}),
                         [](const auto& info) { return info.param.name; });

// The MTP block is skipped: the file with it gives the logits of the file
// without it, bit for bit (the generator draws every weight from its name).
TEST(HybridMtp, TheAppendedBlockIsNotRun) {
  const auto with = load_two_threads(generate_model("hybrid_qwen35_mtp", "--arch qwen35 --mtp 1"));
  const auto without = load_two_threads(generate_model("hybrid_qwen35", "--arch qwen35"));
  const std::vector<Token> prompt = random_prompt(320, 10, 43);
  expect_same_logits_bitwise(*with, *without, prompt);
}

// seam serve shares decode calls between sequences; with its matrices in
// K-quants a hybrid's logits stay the same alone and beside 15 others at
// every level, the delta-net projections interleaved like the rest. Widths of
// 256 so that every matrix takes Q4_K_M's types: 16 v-heads of 16 (ssm_beta
// and ssm_alpha have 16 rows), 2 k-heads, attention heads of 64.
TEST(HybridBatchInvariance, KQuantLogitsAloneAreThoseBesideOthers) {
  const std::string src =
      generate_model("hybrid_qwen35_256",
                     "--arch qwen35 --seed 3 --dim 256 --layers 4 --heads 4 --kv-heads 2 --ffn 256 "
                     "--hybrid-head-dim 64 --ssm-state 16 --ssm-groups 2 --ssm-heads 16");
  const std::string file =
      scratch_dir() + "/hybrid_qwen35_q4_k_m." + std::to_string(::getpid()) + ".gguf";
  QuantizeOptions qo;
  qo.mix = "q4_k_m";
  qo.n_threads = 2;
  quantize_model(src, file, qo);
  {
    const GgufFile f = GgufFile::open(file);
    for (const char* name :
         {"blk.0.attn_qkv.weight", "blk.0.attn_gate.weight", "blk.0.ssm_alpha.weight",
          "blk.0.ssm_beta.weight", "blk.0.ssm_out.weight"}) {
      const GgufTensor* t = f.find_tensor(name);
      ASSERT_NE(t, nullptr) << name;
      EXPECT_TRUE(t->type == TensorType::Q4_K || t->type == TensorType::Q5_K ||
                  t->type == TensorType::Q6_K)
          << name;
    }
  }
  LoadOptions lo;
  lo.n_threads = 2;
  for (const char* level : {"scalar", "avx2", "avx512"})
    EXPECT_TRUE(Model::batch_invariant(file, lo, level)) << level;
  if (Model::batch_invariant(file, lo, cpu_level()))  // not at amx
    expect_alone_equals_beside_others(*Model::load(file, lo), 6);
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace seam
