// qwen3: Qwen3 dense models. No q/k/v biases; instead a per-head RMSNorm of q
// and k (blk.N.attn_{q,k}_norm.weight, [head_dim]) before NEOX RoPE. The head
// size comes from `qwen3.attention.key_length` (128), which need not equal
// n_embd / n_head (Qwen3-0.6B: 1024 / 16 = 64). MoE models are `qwen3moe`.
#include "model/arch.h"

namespace seam {

void configure_qwen3(const GgufFile& f, Hparams& hp, Recipe& recipe) {
  read_common_hparams(f, "qwen3", "attention.layer_norm_rms_epsilon", hp);
  read_rope_scaling(f, "qwen3", hp);
  refuse_experts(f, "qwen3");
  recipe.rope_neox = true;
  recipe.qk_norm = true;
  recipe.ffn_act = Activation::Silu;
}

}  // namespace seam
