// llama: Llama 1/2/3, Mistral 7B, SmolLM, TinyLlama, ... RMSNorm, adjacent-pair
// RoPE (as the converters store Q/K), GQA, SwiGLU, tied or separate output.
// Llama 3 RoPE scaling arrives as the `rope_freqs.weight` tensor.
//
// Mistral 7B converts to this architecture too. Its 4096-token sliding window
// is not applied: llama.cpp's `llama` graph ignores any window, and real files
// are compared against it, so a `llama.attention.sliding_window` key is left
// unread rather than changing results beyond 4096 tokens.
#include "model/arch.h"

namespace seam {

void configure_llama(const GgufFile& f, Hparams& hp, Recipe& recipe) {
  read_common_hparams(f, "llama", "attention.layer_norm_rms_epsilon", hp);
  hp.rope_scale = read_rope_scaling(f, "llama", {"llama3"});
  refuse_experts(f, "llama");
  recipe.rope_neox = false;
  recipe.ffn_act = Activation::Silu;
}

}  // namespace seam
