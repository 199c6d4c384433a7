// Our forward pass against tools/reference.py (float64 numpy, written from
// the published math) on random-weight llama models of several shapes, and
// on the real stories260K checkpoint.
#include <gtest/gtest.h>

#include <fstream>

#include "python_tools.h"
#include "test_model.h"

namespace seam {
namespace {

using namespace seam::testing;

struct Case {
  std::string name;
  std::string args;
  // Max |ours - ref| / max |ref| over each logits row (test_model.h: the
  // figures each bound was derived from). F32/F16 weights are used exactly, so
  // only float32 accumulation differs from float64: kExactTol. Q8_0/Q4_0
  // weights are decoded exactly by the reference, but our matmul quantizes
  // activations to Q8_0 blocks (as llama.cpp does) — a relative rounding error
  // of up to 1/254 of each 32-block's max per element: kQuantTol.
  double tol;
};

class ReferenceForward : public ::testing::TestWithParam<Case> {};

TEST_P(ReferenceForward, LogitsMatchEveryPosition) {
  const Case& c = GetParam();
  const std::string path = generate_model(c.name, c.args);
  LoadOptions lo;
  lo.n_threads = 2;
  auto model = Model::load(path, lo);
  const std::vector<Token> ids = random_prompt(model->info().n_vocab, 24, 99);
  const std::vector<float> ref = reference_logits(path, ids, c.name);
  const double worst = expect_logits_match(*model, ids, ref, c.tol, c.name);
  RecordProperty("worst_rel_diff", std::to_string(worst));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ReferenceForward,
    ::testing::Values(
        Case{"f32_mha_odd",
             "--dim 48 --layers 2 --heads 3 --ffn 100 --vocab 300 --dtype F32 --seed 1", kExactTol},
        Case{"f32_gqa_tied",
             "--dim 64 --layers 3 --heads 8 --kv-heads 2 --ffn 96 --vocab 280 --tied --dtype F32 "
             "--seed 2",
             kExactTol},
        Case{"f32_llama3_partial_rope",
             "--dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 160 --vocab 300 --rope-dim 8 "
             "--llama3-rope-freqs --ctx 32 --rope-theta 500000 --dtype F32 --seed 3",
             kExactTol},
        Case{
            "f16_gqa",
            "--dim 96 --layers 2 --heads 6 --kv-heads 3 --ffn 200 --vocab 320 --dtype F16 --seed 4",
            kExactTol},
        Case{"q8_0_gqa",
             "--dim 128 --layers 2 --heads 4 --kv-heads 2 --ffn 256 --vocab 300 --dtype Q8_0 "
             "--seed 5",
             kQuantTol},
        Case{"q4_0_mha",
             "--dim 64 --layers 2 --heads 2 --ffn 128 --vocab 288 --dtype Q4_0 --seed 6",
             kQuantTol}),
    [](const auto& info) { return info.param.name; });

// Models whose metadata states a value other than the default (or than what
// the shapes would suggest): a forward pass that ignored the key would compute
// the plain model. The reference logits of the two differ by far more than the
// bound, so such a pass fails here.
struct KeyCase {
  std::string name;
  std::string args;   // states the key
  std::string plain;  // the same model without it
};

class MetadataKeys : public ::testing::TestWithParam<KeyCase> {};

TEST_P(MetadataKeys, EveryKeyChangesTheLogitsAndIsHonoured) {
  const KeyCase& c = GetParam();
  const std::string path = generate_model("key_" + c.name, c.args + " --dtype F32");
  auto model = load_two_threads(path);
  const std::vector<Token> ids = random_prompt(model->info().n_vocab, 24, 17);
  const std::vector<float> ref = reference_logits(path, ids, "key_" + c.name);
  const double worst = expect_logits_match(*model, ids, ref, kExactTol, c.name);
  const std::string plain = generate_model("key_plain_" + c.name, c.plain + " --dtype F32");
  const std::vector<float> ref_plain = reference_logits(plain, ids, "key_plain_" + c.name);
  const double effect = worst_rel(ref, ref_plain, model->info().n_vocab);
  std::printf("[ %s ] the key moves the reference logits by %.3g (ours: %.3g from it)\n",
              c.name.c_str(), effect, worst);
  EXPECT_GT(effect, 10 * kExactTol) << c.name << ": the key barely matters";
}

const std::string kKeyBase =
    "--dim 48 --layers 2 --heads 4 --kv-heads 2 --ffn 96 --vocab 300 --seed 8";

INSTANTIATE_TEST_SUITE_P(
    Llama, MetadataKeys,
    ::testing::Values(
        // attention.layer_norm_rms_epsilon 1e-2 instead of 1e-5.
        KeyCase{"norm_eps", kKeyBase + " --norm-eps 1e-2", kKeyBase},
        // rope.freq_base 100 instead of 10000.
        KeyCase{"rope_base", kKeyBase + " --rope-theta 100", kKeyBase},
        // attention.key_length 24, not n_embd / n_head = 12 (wider q/k/v weights).
        KeyCase{"head_dim", kKeyBase + " --head-dim 24", kKeyBase},
        // attention.sliding_window 6: every layer looks back 6 tokens of the 24.
        KeyCase{"window", kKeyBase + " --window 6", kKeyBase}),
    [](const auto& info) { return info.param.name; });

TEST(RealModel, Stories260KGreedyMatchesReference) {
  auto model = stories();
  const std::vector<Token> prompt = model->tokenize("Once upon a time", true, false);
  ASSERT_EQ(prompt, (std::vector<Token>{1, 403, 407, 261, 378}));
  auto s = model->session(exact_config(256, 512));
  std::vector<Token> ours;
  auto rows = decode_all(*s, prompt, 0);
  std::vector<float> last = rows.back();
  for (int i = 0; i < 48; ++i) {
    Token best = 0;
    for (std::size_t j = 1; j < last.size(); ++j)
      if (last[j] > last[static_cast<std::size_t>(best)]) best = static_cast<Token>(j);
    ours.push_back(best);
    auto next =
        decode_all(*s, std::span(&best, 1), 0, static_cast<std::int32_t>(prompt.size() + i));
    last = next[0];
  }
  const std::vector<Token> ref = reference_greedy(stories_path(), prompt, 48);
  EXPECT_EQ(ours, ref);
  // The reference's text, not ours: the outputs pinned elsewhere (the
  // simple_generate example's test, docs/cli.md's examples, which
  // CliDocs.RunAndChatExamplesWork checks seam prints) are the reference's.
  const std::string text = model->detok(ref, Detok::Plain);
  std::printf("stories260K: Once upon a time%s\n", text.c_str());
  EXPECT_EQ(text.rfind(", there was a little girl named Lily.", 0), 0u) << text;
  std::ifstream doc(std::string(SEAM_SOURCE_DIR) + "/docs/cli.md");
  std::vector<std::string> lines;
  for (std::string l; std::getline(doc, l);) lines.push_back(l);
  const std::string run24 =
      "$ seam run -m ../shared/models/stories260K.gguf -p \"Once upon a time\" --temp 0 -n 24";
  const std::string run3 =
      "$ seam run -m ../shared/models/stories260K.gguf -p \"Once upon a time\" "
      "--temp 0 -n 3 --json --logprobs 2";
  int found = 0;
  for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
    if (lines[i] == run24) {
      ++found;
      EXPECT_EQ(model->detok(std::span(ref).first(24), Detok::Plain).rfind(lines[i + 1], 0), 0u)
          << "docs/cli.md shows: " << lines[i + 1];
    } else if (lines[i] == run3) {
      ++found;
      const std::string want = "\"tokens\":[" + join_ids({ref[0], ref[1], ref[2]}) + "]";
      EXPECT_NE(lines[i + 1].find(want), std::string::npos) << lines[i + 1];
    }
  }
  EXPECT_EQ(found, 2) << "docs/cli.md's stories260K examples changed: update this test";
}

}  // namespace
}  // namespace seam
