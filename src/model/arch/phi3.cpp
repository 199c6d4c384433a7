// phi3: Phi-3 / Phi-3.5 / Phi-4-mini dense models. Llama's block with q, k, v
// fused into blk.N.attn_qkv.weight (rows [q; k; v]; separate attn_q/k/v are
// accepted too) and gate, up fused into blk.N.ffn_up.weight (rows [gate; up],
// 2 * n_ff: HF's gate_up_proj chunks gate first), NEOX RoPE, possibly partial
// (rope.dimension_count < head size).
//
// `phi3.attention.sliding_window` is not applied: llama.cpp disables Phi's
// window (its converters do not record which layers use it), and we match it.
// LongRoPE (128k models: rope_factors_long/short.weight with an attention
// factor chosen by context size) is refused by name.
#include <string>

#include "model/arch.h"
#include "seam/error.h"

namespace seam {

void configure_phi3(const GgufFile& f, Hparams& hp, Recipe& recipe) {
  read_common_hparams(f, "phi3", "attention.layer_norm_rms_epsilon", hp);
  hp.rope_scale = read_rope_scaling(f, "phi3");
  refuse_experts(f, "phi3");
  for (const char* name : {"rope_factors_long.weight", "rope_factors_short.weight"}) {
    if (f.find_tensor(name)) {
      throw Error(Errc::Unsupported, std::string("phi3 LongRoPE scaling (tensor ") + name +
                                         ") is not supported by this build");
    }
  }
  recipe.rope_neox = true;
  recipe.ffn_act = Activation::Silu;
  recipe.fused_qkv = f.find_tensor("blk.0.attn_qkv.weight") != nullptr;
  recipe.fused_gate_up = true;
}

}  // namespace seam
