// Every architecture recipe against tools/reference.py (float64 numpy, written
// from each model's published math) on random-weight models that carry the
// tensor names and metadata keys convert_hf_to_gguf writes; and admission:
// a file missing a required tensor, or carrying an option this build does not
// implement, is refused with a message naming it.
#include <gtest/gtest.h>

#include "python_tools.h"
#include "seam/error.h"
#include "test_model.h"

namespace seam {
namespace {

using namespace seam::testing;

struct ArchCase {
  std::string name;
  std::string args;
  double tol;  // max |ours - ref| / max |ref| per row; see test_model.h
};

class ArchForward : public ::testing::TestWithParam<ArchCase> {};

TEST_P(ArchForward, LogitsMatchEveryPosition) {
  const ArchCase& c = GetParam();
  const std::string path = generate_model("arch_" + c.name, c.args);
  auto model = load_two_threads(path);
  // 24 tokens: longer than every window below, so local layers drop old cells.
  const std::vector<Token> ids = random_prompt(model->info().n_vocab, 24, 7);
  const std::vector<float> ref = reference_logits(path, ids, "arch_" + c.name);
  // Chunks of 5 (in the helper) make windows straddle batches and the KV cache.
  const double worst = expect_logits_match(*model, ids, ref, c.tol, c.name);
  RecordProperty("worst_rel_diff", std::to_string(worst));
}

INSTANTIATE_TEST_SUITE_P(
    Archs, ArchForward,
    ::testing::Values(
        ArchCase{"qwen2_f32_tied",
                 "--arch qwen2 --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 96 --tied "
                 "--seed 11",
                 kExactTol},
        ArchCase{"qwen2_q8_0",
                 "--arch qwen2 --dim 64 --layers 2 --heads 2 --ffn 128 --dtype Q8_0 --seed 12",
                 kQuantTol},
        // head_dim 24 * 4 heads != n_embd 48: the size comes from attention.key_length.
        ArchCase{"qwen3_f32_head_dim",
                 "--arch qwen3 --dim 48 --layers 2 --heads 4 --kv-heads 2 --head-dim 24 "
                 "--ffn 96 --seed 13",
                 kExactTol},
        ArchCase{"qwen3_q8_0",
                 "--arch qwen3 --dim 64 --layers 2 --heads 4 --kv-heads 2 --head-dim 32 "
                 "--ffn 96 --dtype Q8_0 --seed 14",
                 kQuantTol},
        // Small caps so tanh is far from linear; window 5 on layers 0 and 2.
        ArchCase{"gemma2_f32_swa_softcap",
                 "--arch gemma2 --dim 48 --layers 3 --heads 2 --kv-heads 1 --ffn 96 --tied "
                 "--window 5 --attn-softcap 3 --final-softcap 2 --seed 15",
                 kExactTol},
        // 46 blocks is gemma2 27B: query_pre_attn_scalar = n_embd / n_head (16), not
        // head_dim (32).
        ArchCase{"gemma2_f32_27b_scale",
                 "--arch gemma2 --dim 32 --layers 46 --heads 2 --head-dim 32 --ffn 32 --tied "
                 "--window 6 --seed 23",
                 kExactTol},
        // No softcap/window keys: gemma2's defaults (50, 30, 4096).
        ArchCase{"gemma2_f32_defaults",
                 "--arch gemma2 --dim 32 --layers 2 --heads 2 --ffn 64 --tied --seed 16",
                 kExactTol},
        // A final cap above the logit range: a saturated cap bounds max |ref| (the
        // denominator) but not the Q8_0 activation rounding; the F32 case covers tight caps.
        ArchCase{"gemma2_q8_0",
                 "--arch gemma2 --dim 64 --layers 2 --heads 2 --ffn 128 --tied --window 6 "
                 "--attn-softcap 20 --final-softcap 60 --dtype Q8_0 --seed 17",
                 kQuantTol},
        // Six layers: 0-4 local (base 10000, unscaled), 5 global (base 1e6, linear 4).
        ArchCase{"gemma3_f32_local_global",
                 "--arch gemma3 --dim 32 --layers 6 --heads 2 --kv-heads 1 --head-dim 16 "
                 "--ffn 64 --tied --window 5 --rope-theta 1000000 --rope-linear 4 --seed 18",
                 kExactTol},
        // Per-layer pattern flags, a local RoPE base from the file, a final softcap.
        ArchCase{"gemma3_f32_pattern",
                 "--arch gemma3 --dim 48 --layers 3 --heads 3 --kv-heads 1 --ffn 64 --tied "
                 "--window 4 --swa-pattern 1,0,1 --rope-base-swa 500 --final-softcap 3 "
                 "--seed 19",
                 kExactTol},
        ArchCase{"gemma3_q8_0",
                 "--arch gemma3 --dim 64 --layers 6 --heads 2 --kv-heads 1 --head-dim 32 "
                 "--ffn 64 --tied --window 5 --rope-theta 1000000 --dtype Q8_0 --seed 20",
                 kQuantTol},
        // Fused attn_qkv and [gate; up], partial rotary (8 of 16 dims).
        ArchCase{"phi3_f32_partial_rope",
                 "--arch phi3 --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 96 --rope-dim 8 "
                 "--seed 21",
                 kExactTol},
        // Mistral Small 3 / Ministral 3 text models: llama's block with head_dim from
        // attention.key_length (here 32 * 4 heads != 64) and YaRN; see
        // arch_rope_scaling_test.cpp for the attention temperature and long prompts.
        ArchCase{"mistral3_f32_yarn",
                 "--arch mistral3 --dim 64 --layers 2 --heads 4 --kv-heads 2 --head-dim 32 "
                 "--ffn 96 --yarn 4 --orig-ctx 8 --seed 24",
                 kExactTol},
        ArchCase{"mistral3_q8_0",
                 "--arch mistral3 --dim 64 --layers 2 --heads 2 --ffn 128 --dtype Q8_0 --seed 25",
                 kQuantTol},
        ArchCase{"phi3_q8_0",
                 "--arch phi3 --dim 64 --layers 2 --heads 2 --ffn 128 --dtype Q8_0 --seed 22",
                 kQuantTol}),
    [](const auto& info) { return info.param.name; });

struct Refusal {
  std::string name;
  std::string args;
  Errc code;
  std::string must_name;  // the message names the tensor / key / option
};

class ArchAdmission : public ::testing::TestWithParam<Refusal> {};

TEST_P(ArchAdmission, RefusedNamingTheReason) {
  const Refusal& c = GetParam();
  const std::string path = generate_model("arch_refuse_" + c.name, c.args);
  try {
    Model::load(path, LoadOptions{});
    ADD_FAILURE() << c.name << ": expected the load to be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), c.code) << e.what();
    EXPECT_NE(std::string(e.what()).find(c.must_name), std::string::npos)
        << "message '" << e.what() << "' does not name " << c.must_name;
  }
}

const std::string kSmall = " --dim 32 --layers 2 --heads 2 --ffn 64 --seed 3";

INSTANTIATE_TEST_SUITE_P(
    Archs, ArchAdmission,
    ::testing::Values(
        Refusal{"qwen2_no_k_bias", "--arch qwen2 --drop blk.1.attn_k.bias" + kSmall,
                Errc::BadFormat, "blk.1.attn_k.bias"},
        Refusal{"qwen3_no_q_norm", "--arch qwen3 --drop blk.0.attn_q_norm.weight" + kSmall,
                Errc::BadFormat, "blk.0.attn_q_norm.weight"},
        Refusal{"gemma2_no_post_ffw_norm",
                "--arch gemma2 --tied --drop blk.1.post_ffw_norm.weight" + kSmall, Errc::BadFormat,
                "blk.1.post_ffw_norm.weight"},
        Refusal{"gemma3_no_k_norm", "--arch gemma3 --tied --drop blk.0.attn_k_norm.weight" + kSmall,
                Errc::BadFormat, "blk.0.attn_k_norm.weight"},
        Refusal{"phi3_no_qkv", "--arch phi3 --drop blk.1.attn_qkv.weight" + kSmall, Errc::BadFormat,
                "blk.1.attn_qkv.weight"},
        Refusal{"phi3_no_ffn_up", "--arch phi3 --drop blk.0.ffn_up.weight" + kSmall,
                Errc::BadFormat, "blk.0.ffn_up.weight"},
        // Options this build does not implement are refused by name, not guessed.
        Refusal{"qwen2_dynamic", "--arch qwen2 --set qwen2.rope.scaling.type=dynamic" + kSmall,
                Errc::Unsupported, "'dynamic'"},
        Refusal{"qwen3_moe", "--arch qwen3 --set qwen3.expert_count=8" + kSmall, Errc::Unsupported,
                "expert_count"},
        Refusal{"mistral3_no_ffn_gate", "--arch mistral3 --drop blk.1.ffn_gate.weight" + kSmall,
                Errc::BadFormat, "blk.1.ffn_gate.weight"},
        Refusal{"gemma3_attn_softcap",
                "--arch gemma3 --tied --set gemma3.attn_logit_softcapping=50" + kSmall,
                Errc::Unsupported, "gemma3.attn_logit_softcapping"},
        Refusal{"gemma2_short_pattern",
                "--arch gemma2 --tied --window 8 --swa-pattern 1,0,1" + kSmall, Errc::BadFormat,
                "gemma2.attention.sliding_window_pattern"},
        // RoPE scaling options (arch_rope_scaling_test checks what they compute)
        Refusal{"phi3_only_long",
                "--arch phi3 --longrope --drop rope_factors_short.weight" + kSmall, Errc::BadFormat,
                "rope_factors_short.weight"},
        Refusal{"yarn_factor_below_one", "--arch qwen2 --yarn 0.5" + kSmall, Errc::BadFormat,
                "qwen2.rope.scaling.factor"},
        Refusal{"llama_dynamic", "--arch llama --set llama.rope.scaling.type=dynamic" + kSmall,
                Errc::Unsupported, "'dynamic'"},
        Refusal{"qwen2_longrope_type",
                "--arch qwen2 --set qwen2.rope.scaling.type=longrope" + kSmall, Errc::Unsupported,
                "'longrope'"},
        Refusal{"mistral3_negative_temperature",
                "--arch mistral3 --set mistral3.attention.temperature_scale=-1.5" + kSmall,
                Errc::BadFormat, "mistral3.attention.temperature_scale"}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace seam
