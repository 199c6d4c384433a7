// qwen2: Qwen1.5, Qwen2, Qwen2.5 (dense). Llama's block with biases on the
// q/k/v projections and NEOX RoPE (pairs (i, i + n_rot/2), as the HF weights
// are stored). Small models tie the output to token_embd. Their HF
// `use_sliding_window` is false, and llama.cpp applies no window to qwen2.
// The MoE variants are the separate `qwen2moe` architecture.
#include "model/arch.h"

namespace seam {

void configure_qwen2(const GgufFile& f, Hparams& hp, Recipe& recipe) {
  read_common_hparams(f, "qwen2", "attention.layer_norm_rms_epsilon", hp);
  read_rope_scaling(f, "qwen2", hp);
  refuse_experts(f, "qwen2");
  recipe.rope_neox = true;
  recipe.qkv_bias = true;
  recipe.ffn_act = Activation::Silu;
}

}  // namespace seam
