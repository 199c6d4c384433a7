// Cross-check with llama.cpp (tests/peer.h: installed in CI, skipped elsewhere without it):
// the scaling variants whose metadata llama.cpp reads the same way give its
// greedy ids, and every step's logits within its own float16-KV noise.
// The reference check (arch_rope_scaling_test.cpp) is the one that must pass.
#include <gtest/gtest.h>

#include <filesystem>

#include "llamacpp_compare.h"

namespace seam {
namespace {

using namespace seam::testing;

struct PeerCase {
  std::string name;
  std::string args;
};

class LlamaCppScaling : public ::testing::TestWithParam<PeerCase> {};

TEST_P(LlamaCppScaling, GreedyIdsAndLogitsMatch) {
  SEAM_NEED_PEER(peer_logits_tool());
  const PeerCase& c = GetParam();
  const std::string path = generate_model("peer_" + c.name, c.args);
  auto model = load_two_threads(path);
  // 40 tokens: past every original context below, so the scaling is in play.
  const std::vector<Token> ids = random_prompt(model->info().n_vocab, 40, 3);
  const PeerComparison r = compare_with_llamacpp(path, ids, 8);
  std::printf(
      "[ %s ] seam vs llama.cpp: worst relative logit difference %.3g, smallest top-1 "
      "margin %.3g\n",
      c.name.c_str(), r.worst_rel, r.min_peer_margin);
  EXPECT_EQ(r.seam_ids, r.peer_ids) << c.name;
  EXPECT_LT(r.worst_rel, kPeerExactTol) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    Peer, LlamaCppScaling,
    ::testing::Values(
        PeerCase{"qwen2_yarn",
                 "--arch qwen2 --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 96 --yarn 4 "
                 "--orig-ctx 16 --seed 31"},
        // general.name must not contain "phi3": llama.cpp then expects Phi-3's special tokens.
        PeerCase{"phi3_longrope_long",
                 "--arch phi3 --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 96 --rope-dim 8 "
                 "--ctx 256 --longrope --orig-ctx 32 --seed 35 --name ref-p3"},
        PeerCase{"phi3_yarn",
                 "--arch phi3 --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 96 --rope-dim 8 "
                 "--yarn 4 --orig-ctx 16 --seed 35 --name ref-p3"},
        PeerCase{"mistral3_yarn_temp",
                 "--arch mistral3 --dim 64 --layers 2 --heads 4 --kv-heads 2 --head-dim 32 "
                 "--ffn 96 --yarn 8 --orig-ctx 8 --yarn-log-mul 1 --attn-temp-scale 0.1 --seed 37"},
        PeerCase{"gemma3_yarn_global",
                 "--arch gemma3 --dim 32 --layers 6 --heads 2 --kv-heads 1 --head-dim 16 --ffn 64 "
                 "--tied --window 5 --rope-theta 1000000 --yarn 4 --orig-ctx 8 --seed 34"}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace seam
