// Files written by `seam quantize` load in llama.cpp (the peer that
// ../shared/peers/setup-llamacpp.sh installs) and decode there as they do in
// seam: every greedy step's logits row within tolerance and the same greedy
// ids. Skipped where the peer is not installed; every type and recipe is also
// checked against tools/reference.py without it (arch_quantized_test).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "python_tools.h"
#include "seam/quantize.h"
#include "test_model.h"

namespace seam {
namespace {

using namespace seam::testing;

std::string peer_logits_tool() {
  const char* env = std::getenv("LLAMACPP_PEER_DIR");
  const std::string dir = env ? env : std::string(SEAM_SHARED_DIR) + "/../peer";
  return dir + "/bin/llamacpp-logits";
}

struct PeerCase {
  std::string arch, extra;  // reference.py gen options
  std::string type, mix;    // seam quantize target
};

std::string case_name(const PeerCase& c) { return c.arch + "_" + (c.mix.empty() ? c.type : c.mix); }

void PrintTo(const PeerCase& c, std::ostream* os) { *os << case_name(c); }

class LlamaCppPeer : public ::testing::TestWithParam<PeerCase> {};

TEST_P(LlamaCppPeer, QuantizedFileDecodesAlike) {
  const std::string tool = peer_logits_tool();
  if (!std::filesystem::exists(tool)) {
    GTEST_SKIP() << "llama.cpp peer not installed (" << tool
                 << "); run ../shared/peers/setup-llamacpp.sh";
  }
  const PeerCase& c = GetParam();
  // Rows of 256 so every K-quant applies without fallback. A neutral name:
  // llama.cpp sets Phi-3 token attributes by general.name and then requires
  // Phi-3's own special tokens in the vocabulary.
  const std::string f32 = generate_model(
      "peersrc_" + c.arch, "--arch " + c.arch +
                               " --dim 256 --layers 2 --heads 4 --kv-heads 2 --ffn 512 --vocab 320"
                               " --dtype F32 --seed 23 --name peer-check " +
                               c.extra);
  const std::string name = case_name(c);
  const std::string file =
      scratch_dir() + "/peer_" + name + "." + std::to_string(::getpid()) + ".gguf";
  QuantizeOptions qo;
  qo.type = c.type;
  qo.mix = c.mix;
  qo.n_threads = 2;
  quantize_model(f32, file, qo);

  const std::vector<Token> prompt = random_prompt(320, 16, 3);
  constexpr int kSteps = 8;
  const std::string steps_file = file + ".steps.f32";
  const nlohmann::json peer = nlohmann::json::parse(run_command(
      tool + " " + file + " '[" + join_ids(prompt) + "]' --n " + std::to_string(kSteps) +
      " --threads 2 --step-logits-out " + steps_file + " 2>/dev/null"));
  const std::vector<Token> peer_ids = peer["greedy_ids"].get<std::vector<Token>>();
  const std::vector<float> peer_steps = read_f32_file(steps_file);

  LoadOptions lo;
  lo.n_threads = 2;
  auto model = Model::load(file, lo);
  const std::size_t nv = model->info().n_vocab;
  ASSERT_EQ(peer_steps.size(), kSteps * nv);
  auto s = model->session({64, 512, 1});
  std::vector<float> row = decode_all(*s, prompt, 0).back();
  std::vector<Token> ids;
  double worst = 0;
  for (int step = 0; step < kSteps; ++step) {
    const std::span<const float> theirs = std::span(peer_steps).subspan(step * nv, nv);
    const double r = rel_diff(row, theirs);
    worst = std::max(worst, r);
    // Both engines quantize activations (Q8_0 / Q8_K blocks); llama.cpp also
    // keeps the KV cache in F16. The bound of the other quantized-file tests.
    EXPECT_LT(r, 2e-2) << name << " step " << step;
    const Token best = static_cast<Token>(std::max_element(row.begin(), row.end()) - row.begin());
    ids.push_back(best);
    row = decode_all(*s, std::span(&best, 1), 0,
                     static_cast<std::int32_t>(prompt.size() + ids.size() - 1))[0];
  }
  std::printf("[ %s ] llama.cpp vs seam: worst relative logit difference %.3g\n", name.c_str(),
              worst);
  EXPECT_EQ(ids, peer_ids) << name;
  std::filesystem::remove(file);
  std::filesystem::remove(steps_file);
}

std::vector<PeerCase> cases() {
  std::vector<PeerCase> v;
  for (const char* type : {"Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K"}) {
    v.push_back({"llama", "", type, ""});
  }
  // Gemma 2's LM head is always token_embd: llama.cpp refuses an output.weight.
  const std::vector<std::pair<std::string, std::string>> archs = {{"llama", ""},
                                                                  {"qwen2", ""},
                                                                  {"qwen3", "--head-dim 64"},
                                                                  {"gemma2", "--tied"},
                                                                  {"gemma3", "--layers 6"},
                                                                  {"phi3", ""}};
  for (const auto& [arch, extra] : archs) {
    if (arch != "llama") v.push_back({arch, extra, "Q8_0", ""});
    v.push_back({arch, extra, "", "q4_k_m"});
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(SeamQuantize, LlamaCppPeer, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return case_name(info.param); });

}  // namespace
}  // namespace seam
