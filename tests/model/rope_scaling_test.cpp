// RoPE-scaling metadata -> hyperparameters (read_rope_scaling and the
// recipes), and the YaRN angles the rope op computes from them, checked
// against the formulas written out here.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "compute/ops.h"
#include "model/arch.h"
#include "seam/error.h"

namespace seam {
namespace {

using Kv = std::vector<std::pair<std::string, GgufValue>>;

// The keys every recipe needs, plus `extra`.
GgufFile file_with(const std::string& arch, Kv extra) {
  Kv kv = {
      {"general.architecture", GgufValue::str(arch)},
      {arch + ".embedding_length", GgufValue::u32(64)},
      {arch + ".block_count", GgufValue::u32(3)},
      {arch + ".attention.head_count", GgufValue::u32(4)},
      {arch + ".feed_forward_length", GgufValue::u32(96)},
      {arch + ".context_length", GgufValue::u32(4096)},
      {arch + ".attention.layer_norm_rms_epsilon", GgufValue::f32(1e-5f)},
  };
  for (auto& p : extra) kv.push_back(std::move(p));
  return GgufFile::assemble("test", std::move(kv), {}, {});
}

Hparams configure(const std::string& arch, Kv extra) {
  const GgufFile f = file_with(arch, std::move(extra));
  Hparams hp;
  Recipe r;
  find_arch(arch)->configure(f, hp, r);
  return hp;
}

TEST(RopeScaling, YarnDefaultsFollowThePaper) {
  const Hparams hp = configure("qwen2", {{"qwen2.rope.scaling.type", GgufValue::str("yarn")},
                                         {"qwen2.rope.scaling.factor", GgufValue::f32(4.0f)}});
  EXPECT_FLOAT_EQ(hp.rope_scale, 0.25f);
  EXPECT_EQ(hp.n_ctx_orig, 4096u);  // no original_context_length: the training context
  EXPECT_FLOAT_EQ(hp.yarn_ext_factor, 1.0f);
  EXPECT_FLOAT_EQ(hp.yarn_beta_fast, 32.0f);
  EXPECT_FLOAT_EQ(hp.yarn_beta_slow, 1.0f);
  EXPECT_NEAR(hp.yarn_mscale, 0.1 * std::log(4.0) + 1.0, 1e-6);
  EXPECT_FLOAT_EQ(hp.rope_attn_factor, 1.0f);
}

TEST(RopeScaling, YarnAttentionFactorSources) {
  const std::string p = "llama.rope.scaling.";
  Kv base = {{p + "type", GgufValue::str("yarn")},
             {p + "factor", GgufValue::f32(16.0f)},
             {p + "original_context_length", GgufValue::u32(256)},
             {p + "attn_factor", GgufValue::f32(0.5f)}};
  Kv explicit_af = base;
  explicit_af.push_back({p + "yarn_attn_factor", GgufValue::f32(1.25f)});
  explicit_af.push_back({p + "yarn_log_multiplier", GgufValue::f32(1.0f)});
  Hparams hp = configure("llama", explicit_af);
  EXPECT_FLOAT_EQ(hp.yarn_mscale, 1.25f);  // HF: an explicit attention_factor wins
  EXPECT_FLOAT_EQ(hp.rope_attn_factor, 0.5f);
  EXPECT_EQ(hp.n_ctx_orig, 256u);

  Kv log_mul = base;
  log_mul.push_back({p + "yarn_log_multiplier", GgufValue::f32(0.5f)});
  hp = configure("llama", log_mul);
  const double m1 = 0.1 * std::log(16.0) + 1.0, m05 = 0.05 * std::log(16.0) + 1.0;
  EXPECT_NEAR(hp.yarn_mscale, m1 / m05, 1e-6);

  Kv zero_log_mul = base;  // Mistral's converter writes 0 for "apply the usual factor"
  zero_log_mul.push_back({p + "yarn_log_multiplier", GgufValue::f32(0.0f)});
  EXPECT_NEAR(configure("llama", zero_log_mul).yarn_mscale, m1, 1e-6);
}

TEST(RopeScaling, BadValuesAreRefusedByName) {
  const auto refused = [](const std::string& arch, Kv kv, const std::string& name, Errc code) {
    try {
      configure(arch, std::move(kv));
      ADD_FAILURE() << "expected a refusal naming " << name;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  };
  refused("qwen3",
          {{"qwen3.rope.scaling.type", GgufValue::str("yarn")},
           {"qwen3.rope.scaling.yarn_ext_factor", GgufValue::f32(2.0f)}},
          "qwen3.rope.scaling.yarn_ext_factor", Errc::BadFormat);
  refused("llama", {{"llama.rope.scaling.type", GgufValue::str("longrope")}}, "'longrope'",
          Errc::Unsupported);
  refused("gemma2",
          {{"gemma2.rope.scaling.type", GgufValue::str("yarn")},
           {"gemma2.rope.scaling.factor", GgufValue::f32(0.5f)}},
          "gemma2.rope.scaling.factor", Errc::BadFormat);
}

TEST(RopeScaling, LlamaWindowOnEveryLayerOnlyWhenStated) {
  Hparams hp = configure("llama", {});
  EXPECT_EQ(hp.n_swa, 0u);
  hp = configure("llama", {{"llama.attention.sliding_window", GgufValue::u32(4096)},
                           {"llama.rope.freq_base", GgufValue::f32(1e6f)}});
  EXPECT_EQ(hp.n_swa, 4096u);
  for (std::uint32_t l = 0; l < hp.n_layer; ++l) EXPECT_TRUE(hp.is_swa(l)) << l;
  EXPECT_FLOAT_EQ(hp.rope_base_swa, 1e6f);  // window layers rotate like the others
}

TEST(RopeScaling, Mistral3Temperature) {
  const Hparams hp = configure(
      "mistral3", {{"mistral3.attention.temperature_scale", GgufValue::f32(0.1f)},
                   {"mistral3.rope.scaling.original_context_length", GgufValue::u32(16384)}});
  EXPECT_FLOAT_EQ(hp.attn_temp_scale, 0.1f);
  EXPECT_EQ(hp.n_ctx_orig, 16384u);
}

// The rope op's YaRN angles against the paper's per-pair frequencies.
TEST(RopeScaling, YarnAnglesMixScaledAndOriginalFrequencies) {
  RopeParams p;
  p.n_rot = 64;
  p.freq_base = 10000.0f;
  p.freq_scale = 1.0f / 16.0f;
  p.ext_factor = 1.0f;
  p.attn_factor = 1.5f;
  ops::yarn_corr_dims(p.n_rot, 4096, p.freq_base, 32.0f, 1.0f, &p.corr_low, &p.corr_high);
  // Pair i turns 4096 f_i / (2 pi) times in the original context; the ramp runs from the
  // last pair turning at least 32 times to the first turning at most once.
  int last_fast = -1, first_slow = -1;
  for (int i = 0; i < 32; ++i) {
    const double turns = 4096 * std::pow(10000.0, -2.0 * i / 64) / (2 * std::numbers::pi);
    if (turns >= 32) last_fast = i;
    if (turns <= 1 && first_slow < 0) first_slow = i;
  }
  EXPECT_EQ(p.corr_low, static_cast<float>(last_fast));
  EXPECT_EQ(p.corr_high, static_cast<float>(first_slow));
  const std::int32_t pos = 1000;
  std::vector<float> cs(64);
  ops::rope_angles(pos, p, cs.data());
  for (int i = 0; i < 32; ++i) {
    const double f = std::pow(10000.0, -2.0 * i / 64);
    const double ramp = std::clamp((i - p.corr_low) / (p.corr_high - p.corr_low), 0.0f, 1.0f);
    const double keep = 1.0 - ramp;  // weight of the original frequency
    const double theta = pos * (f / 16.0 * (1.0 - keep) + f * keep);
    EXPECT_NEAR(cs[2 * i], 1.5 * std::cos(theta), 2e-6) << i;
    EXPECT_NEAR(cs[2 * i + 1], 1.5 * std::sin(theta), 2e-6) << i;
  }
}

}  // namespace
}  // namespace seam
