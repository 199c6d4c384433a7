// phi3: Phi-3 / Phi-3.5 / Phi-4-mini dense models. Llama's block with q, k, v
// fused into blk.N.attn_qkv.weight (rows [q; k; v]; separate attn_q/k/v are
// accepted too) and gate, up fused into blk.N.ffn_up.weight (rows [gate; up],
// 2 * n_ff: HF's gate_up_proj chunks gate first), NEOX RoPE, possibly partial
// (rope.dimension_count < head size).
//
// LongRoPE (Phi-3-mini-128k, Phi-3.5-mini, Phi-4-mini): rope_factors_long and
// rope_factors_short.weight ([n_rot/2]) divide the rotary frequencies; the
// long ones are used when the session's context exceeds
// `phi3.rope.scaling.original_context_length`, as llama.cpp chooses them (HF
// switches per forward call by the largest position instead; see
// docs/architectures.md). Every rotation's cos and sin are multiplied by
// `phi3.rope.scaling.attn_factor` (the converter's sqrt(1 + ln s / ln n_orig)).
//
// `phi3.attention.sliding_window` is not applied: llama.cpp disables Phi's
// window (its converters do not record which layers use it), and we match it.
#include <string>

#include "model/arch.h"
#include "seam/error.h"

namespace seam {

void configure_phi3(const GgufFile& f, Hparams& hp, Recipe& recipe) {
  read_common_hparams(f, "phi3", "attention.layer_norm_rms_epsilon", hp);
  read_rope_scaling(f, "phi3", hp, {"longrope"});
  refuse_experts(f, "phi3");
  const bool has_long = f.find_tensor("rope_factors_long.weight") != nullptr;
  const bool has_short = f.find_tensor("rope_factors_short.weight") != nullptr;
  if (has_long != has_short) {
    throw Error(Errc::BadFormat, std::string("phi3 LongRoPE needs both rope_factors_long.weight "
                                             "and rope_factors_short.weight; only ") +
                                     (has_long ? "the long" : "the short") + " one is present");
  }
  hp.longrope = has_long;
  recipe.rope_neox = true;
  recipe.ffn_act = Activation::Silu;
  recipe.fused_qkv = f.find_tensor("blk.0.attn_qkv.weight") != nullptr;
  recipe.fused_gate_up = true;
}

}  // namespace seam
