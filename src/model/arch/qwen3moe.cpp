// qwen3moe: Qwen3 mixture-of-experts models (Qwen3-30B-A3B, Qwen3-Coder-30B-A3B,
// 235B-A22B). qwen3's attention (per-head q/k RMSNorm, NEOX RoPE, head size from
// `attention.key_length`) with every FFN a mixture: router blk.N.ffn_gate_inp,
// p = softmax(logits), the top `expert_used_count` of `expert_count` experts with
// their p renormalised to sum 1 (HF norm_topk_prob, which llama.cpp hard-codes),
// SwiGLU experts of width `expert_feed_forward_length` in ffn_{gate,up,down}_exps.
#include "model/arch.h"
#include "seam/error.h"

namespace seam {

void configure_qwen3moe(const GgufFile& f, Hparams& hp, Recipe& recipe) {
  read_common_hparams(f, "qwen3moe", "attention.layer_norm_rms_epsilon", hp);
  read_rope_scaling(f, "qwen3moe", hp);
  read_experts(f, "qwen3moe", hp);
  if (hp.n_expert == 0) {
    throw Error(Errc::BadFormat, "qwen3moe model without 'qwen3moe.expert_count'");
  }
  recipe.rope_neox = true;
  recipe.qk_norm = true;
  recipe.ffn_act = Activation::Silu;
  recipe.routing = Routing::Softmax;
}

}  // namespace seam
