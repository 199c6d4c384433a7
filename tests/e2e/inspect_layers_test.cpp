// `seam inspect` shows the per-layer structure, identical layers grouped: a
// dense model is one group; gpt-oss alternates windowed and full-context
// layers of 8 experts with 2 used; a hybrid and gemma4 show their layer kinds,
// head sizes and shared KV; a model it cannot run says why.
#include <gtest/gtest.h>

#include <string>

#include "seam_binary.h"

namespace seam::e2e {
namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(InspectLayers, DenseModelIsOneGroup) {
  const Output o = run_seam({"inspect", std::string(SEAM_SHARED_DIR) + "/models/stories260K.gguf"});
  ASSERT_EQ(o.rc, 0) << o.err;
  EXPECT_TRUE(contains(o.out,
                       "layers (1 groups of identical layers):\n  0-4: attention, 8 heads (4 "
                       "KV) of 8, rope 8 base 10000, full context, ffn 172\n"))
      << o.out;
}

// llama.cpp's tools and every other seam subcommand name the model with -m.
TEST(InspectLayers, TheModelMayBeGivenWithDashM) {
  const std::string model = std::string(SEAM_SHARED_DIR) + "/models/stories260K.gguf";
  const Output pos = run_seam({"inspect", model});
  const Output dash = run_seam({"inspect", "-m", model});
  ASSERT_EQ(dash.rc, 0) << dash.err;
  EXPECT_EQ(dash.out, pos.out);
  const Output none = run_seam({"inspect"});
  EXPECT_NE(none.rc, 0);
  EXPECT_TRUE(contains(none.err, "seam inspect FILE (or -m FILE)")) << none.err;
  const Output both = run_seam({"inspect", "-m", model, model});
  EXPECT_NE(both.rc, 0);
  EXPECT_TRUE(contains(both.err, "seam: error:")) << both.err;
}

TEST(InspectLayers, GptOssAlternatesWindowsAndNamesItsExperts) {
  const fs::path file = scratch("gpt_oss.gguf");
  ASSERT_EQ(shell(std::string(SEAM_PYTHON) + " " + SEAM_SOURCE_DIR +
                  "/tools/reference.py gen --arch gpt-oss --out " + quote(file.string()) +
                  " 2>/dev/null"),
            0);
  const Output o = run_seam({"inspect", file.string()});
  ASSERT_EQ(o.rc, 0) << o.err;
  const std::string common = "attention, 4 heads (2 KV) of 16, rope neox 16 base 10000 yarn, ";
  EXPECT_TRUE(contains(o.out, "  0, 2: " + common + "window 4, experts 2 of 8 x 32\n")) << o.out;
  EXPECT_TRUE(contains(o.out, "  1, 3: " + common + "full context, experts 2 of 8 x 32\n"))
      << o.out;
  EXPECT_TRUE(contains(o.out, "MXFP4 x12")) << o.out;
  EXPECT_TRUE(contains(o.out, "verdict: this build can run this model")) << o.out;
}

// A hybrid: three gated-delta-net layers (their head counts, state size and
// conv width) then an attention layer, every FFN a mixture with a shared expert.
TEST(InspectLayers, HybridShowsItsLayerKindsAndSharedExpert) {
  const fs::path file = scratch("qwen35moe.gguf");
  ASSERT_EQ(shell(std::string(SEAM_PYTHON) + " " + SEAM_SOURCE_DIR +
                  "/tools/reference.py gen --arch qwen35moe --out " + quote(file.string()) +
                  " 2>/dev/null"),
            0);
  const Output o = run_seam({"inspect", file.string()});
  ASSERT_EQ(o.rc, 0) << o.err;
  const std::string experts = "experts 2 of 8 x 32 + shared 32\n";
  EXPECT_TRUE(contains(o.out,
                       "layers (2 groups of identical layers):\n  0-2: gated delta net, "
                       "2 k-heads / 4 v-heads of 16, conv 4, " +
                           experts))
      << o.out;
  EXPECT_TRUE(contains(o.out,
                       "  3: attention, 4 heads (2 KV) of 32, rope neox 8 base 1e+07, "
                       "full context, " +
                           experts))
      << o.out;
}

// Gemma 4: two head sizes and RoPE bases, windows, KV shared by the last layers,
// wider FFNs on the sharing layers.
TEST(InspectLayers, Gemma4ShowsHeadSizesWindowsAndSharedKv) {
  const fs::path file = scratch("gemma4.gguf");
  ASSERT_EQ(
      shell(std::string(SEAM_PYTHON) + " " + SEAM_SOURCE_DIR +
            "/tools/reference.py gen --arch gemma4 --out " + quote(file.string()) + " 2>/dev/null"),
      0);
  const Output o = run_seam({"inspect", file.string()});
  ASSERT_EQ(o.rc, 0) << o.err;
  const std::string local = "attention, 4 heads (1 KV) of 16, rope neox 16 base 10000, window 4";
  const std::string global =
      "attention, 4 heads (1 KV) of 32, rope neox 32 base 1e+06, full context";
  EXPECT_TRUE(contains(o.out, "layers (4 groups of identical layers):\n  0-1: " + local +
                                  ", ffn 64\n  2: " + global + ", ffn 64\n  3-4: " + local +
                                  ", KV of layer 1, ffn 128\n  5: " + global +
                                  ", KV of layer 2, ffn 128\n"))
      << o.out;
}

}  // namespace
}  // namespace seam::e2e
