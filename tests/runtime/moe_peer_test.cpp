// Mixture-of-experts files against llama.cpp (the peer, tests/peer.h): the
// same 8 greedy ids and every compared logits row within a bound. The files
// are tools/families.py's, whose router draws keep every layer's k-th and
// (k+1)-th router logits >= 0.05 apart over this prompt and its 8-step greedy
// continuation, far above llama.cpp's ~1e-3 rounding, so both engines pick the
// same experts. Skipped where the peer is not installed (failed under
// SEAM_REQUIRE_PEER=1, as in CI).
//
// Bounds, as the largest |difference| over a row divided by its largest
// |logit| (tools/families.py PEER_REL_BOUND): llama.cpp keeps K and V in F16
// (2^-11 relative per value) through at most 4 layers: 3e-3 for F32 weights.
// gpt-oss as shipped (MXFP4 experts): both engines round each expert input
// to Q8_0, but from activations that already differ by the F16 cache rounding,
// so a value near a rounding boundary may land one Q8_0 step (1/254 of its
// block's largest |x|) apart, in 2 matmuls per layer and 4 layers: 3e-2.
#include <gtest/gtest.h>

#include "llamacpp_compare.h"

namespace seam {
namespace {

using namespace seam::testing;

struct PeerMoeCase {
  std::string name, args;
  double bound;
};

void PrintTo(const PeerMoeCase& c, std::ostream* os) { *os << c.name; }

class MoePeer : public ::testing::TestWithParam<PeerMoeCase> {};

TEST_P(MoePeer, GreedyIdsAndLogitsMatchLlamaCpp) {
  const std::string tool = peer_logits_tool();
  SEAM_NEED_PEER(tool);
  const PeerMoeCase& c = GetParam();
  const std::string path = generate_model("moe_" + c.name, c.args);
  // tools/families.py PROBE_IDS: the prompt its router draws were checked on.
  const std::vector<Token> prompt = {1, 17, 99, 42, 5, 200, 201, 77, 3, 150, 260, 31};
  const PeerComparison r = compare_with_llamacpp(path, prompt, 8);
  std::printf(
      "[ %s ] llama.cpp vs seam: worst relative logit difference %.3g (bound %.0e), smallest "
      "top-1 margin %.3g\n",
      c.name.c_str(), r.worst_rel, c.bound, r.min_peer_margin);
  EXPECT_EQ(r.seam_ids, r.peer_ids) << c.name;
  EXPECT_LT(r.worst_rel, c.bound) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    Families, MoePeer,
    ::testing::Values(
        PeerMoeCase{"qwen3moe", "--arch qwen3moe", 3e-3},
        PeerMoeCase{"qwen3moe_top3_of_6", "--arch qwen3moe --experts 6 --experts-used 3", 3e-3},
        PeerMoeCase{"llama_mixtral", "--arch llama --experts 4 --experts-used 2", 3e-3},
        PeerMoeCase{"gpt_oss_f32_experts", "--arch gpt-oss --expert-type F32", 3e-3},
        PeerMoeCase{"gpt_oss_mxfp4", "--arch gpt-oss", 3e-2}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace seam
