// llama: Llama 1/2/3, Mistral 7B, SmolLM, TinyLlama, ... RMSNorm, adjacent-pair
// RoPE (as the converters store Q/K), GQA, SwiGLU, tied or separate output.
// Llama 3 RoPE scaling arrives as the `rope_freqs.weight` tensor; YaRN and
// linear scaling as `llama.rope.scaling.*` keys.
//
// Mixtral-style files are `llama` with `llama.expert_count` > 0: every FFN is
// a softmax-routed mixture (top `expert_used_count`, weights renormalised) of
// SwiGLU experts of width feed_forward_length in blk.N.ffn_{gate,up,down}_exps.
//
// Sliding window (Mistral 7B v0.1: 4096 on every layer): applied to every
// layer when the file states `llama.attention.sliding_window` > 0, as HF's
// MistralForCausalLM does. llama.cpp's `llama` graph never reads the key, but
// its converter does not write it either, so real GGUFs (no key) compute the
// same as llama.cpp; seam's HF loader writes it from config.json, so a Mistral
// v0.1 directory computes what transformers computes beyond 4096 tokens.
#include "model/arch.h"

namespace seam {

void configure_llama(const GgufFile& f, Hparams& hp, Recipe& recipe) {
  read_common_hparams(f, "llama", "attention.layer_norm_rms_epsilon", hp);
  read_rope_scaling(f, "llama", hp, {"llama3"});
  read_experts(f, "llama", hp);
  // Period 0: every layer uses the window; the window's layers rotate like the others.
  read_sliding_window(f, "llama", 0, 0, hp);
  hp.rope_base_swa = hp.rope_base;
  hp.rope_scale_swa = hp.rope_scale;
  recipe.rope_neox = false;
  recipe.ffn_act = Activation::Silu;
}

}  // namespace seam
