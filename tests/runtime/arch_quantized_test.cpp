// Every recipe passes its reference check on files made by `seam quantize`
// (Q8_0 and the Q4_K_M mix): tools/reference.py decodes the quantized weights
// exactly, our matmul additionally quantizes activations (Q8_0 / Q8_K blocks).
#include <gtest/gtest.h>

#include "python_tools.h"
#include "seam/quantize.h"
#include "test_model.h"

namespace seam {
namespace {

using namespace seam::testing;

struct ArchCase {
  std::string arch;
  std::string extra;  // arch-specific generator options
};

class QuantizedRecipe : public ::testing::TestWithParam<ArchCase> {};

TEST_P(QuantizedRecipe, Q8_0AndQ4KMMatchTheReference) {
  const ArchCase& c = GetParam();
  // Rows of 256 so every K-quant applies without fallback.
  const std::string f32 = generate_model(
      "quantsrc_" + c.arch, "--arch " + c.arch +
                                " --dim 256 --layers 2 --heads 4 --kv-heads 2 --ffn 512 --vocab 320"
                                " --dtype F32 --seed 21 " +
                                c.extra);
  for (const std::string mix : {"", "q4_k_m"}) {
    const std::string tag = c.arch + (mix.empty() ? "_q8_0" : "_q4_k_m");
    const std::string out = scratch_dir() + "/" + tag + ".gguf";
    QuantizeOptions qo;
    qo.type = "Q8_0";
    qo.mix = mix;
    qo.n_threads = 2;
    const QuantizeReport rep = quantize_model(f32, out, qo);
    for (const auto& t : rep.tensors) EXPECT_TRUE(t.note.empty()) << t.name << ": " << t.note;

    LoadOptions lo;
    lo.n_threads = 2;
    auto model = Model::load(out, lo);
    const std::vector<Token> ids = random_prompt(model->info().n_vocab, 16, 5);
    const std::vector<float> ref = reference_logits(out, ids, tag);
    auto s = model->session({64, 512, 1, CacheType::F32});
    auto got = decode_all(*s, ids, 0);
    const std::size_t nv = model->info().n_vocab;
    double worst = 0;
    for (std::size_t t = 0; t < ids.size(); ++t) {
      worst = std::max(worst, rel_diff(got[t], std::span(ref).subspan(t * nv, nv)));
    }
    std::printf("[ %s ] worst relative logit difference %.3g\n", tag.c_str(), worst);
    // Same bound as the reference tests of quantized files: activation
    // quantization to 8 bits per 32- or 256-element block.
    EXPECT_LT(worst, 2e-2) << tag;
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, QuantizedRecipe,
                         ::testing::Values(ArchCase{"llama", ""}, ArchCase{"qwen2", ""},
                                           ArchCase{"qwen3", "--head-dim 64"},
                                           ArchCase{"gemma2", ""}, ArchCase{"gemma3", "--layers 6"},
                                           ArchCase{"phi3", ""},
                                           // YaRN and the attention temperature past
                                           // the original context of 8.
                                           ArchCase{"mistral3",
                                                    "--head-dim 64 --yarn 4 --orig-ctx 8 "
                                                    "--attn-temp-scale 0.1"}),
                         [](const auto& info) { return info.param.arch; });

}  // namespace
}  // namespace seam
