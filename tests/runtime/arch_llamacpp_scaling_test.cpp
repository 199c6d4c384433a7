// Optional cross-check with llama.cpp (/work/peer, absent in CI: skipped):
// the scaling variants whose metadata llama.cpp reads the same way give its
// last-position logits within its own float16-KV noise (~1e-4 relative).
// The reference check (arch_rope_scaling_test.cpp) is the one that must pass.
#include <gtest/gtest.h>

#include <filesystem>

#include "python_tools.h"
#include "test_model.h"

namespace seam {
namespace {

using namespace seam::testing;

const std::string kLlamaCpp = "/work/peer/bin/llamacpp-logits";

struct PeerCase {
  std::string name;
  std::string args;
};

class LlamaCppScaling : public ::testing::TestWithParam<PeerCase> {};

TEST_P(LlamaCppScaling, LastLogitsMatch) {
  if (!std::filesystem::exists(kLlamaCpp)) GTEST_SKIP() << kLlamaCpp << " is not present";
  const PeerCase& c = GetParam();
  const std::string path = generate_model("peer_" + c.name, c.args);
  auto model = load_two_threads(path);
  const std::size_t nv = model->info().n_vocab;
  const std::vector<Token> ids = random_prompt(nv, 40, 3);
  const std::string out = scratch_dir() + "/peer_" + c.name + ".f32";
  run_command(kLlamaCpp + " " + path + " '[" + join_ids(ids) + "]' --n 1 --top 1 --logits-out " +
              out + " > /dev/null 2>&1");
  const std::vector<float> theirs = read_f32_file(out);
  ASSERT_EQ(theirs.size(), nv);
  // 64 cells: above every original context below, as llama.cpp's own context is.
  auto s = model->session({64, 16, 1, CacheType::F32});
  const auto rows = decode_all(*s, ids, 0);
  const double r = rel_diff(rows.back(), theirs);
  std::printf("[ %s ] seam vs llama.cpp, last position: relative difference %.3g\n", c.name.c_str(),
              r);
  EXPECT_LT(r, 5e-4) << c.name;
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
