// gemma3: Gemma 3 text models (270M, 1B, and the language part of 4B/12B/27B).
// gemma2's block (sqrt(n_embd) embedding scale, post-attention and post-FFN
// norms, GELU(tanh), NEOX RoPE, tied output, norms stored with the +1) with a
// per-head q/k RMSNorm before RoPE and no attention soft-capping. Five local
// layers per global one: with `gemma3.attention.sliding_window` set, layer l
// is local unless l % 6 == 5 (or as `attention.sliding_window_pattern` says).
// Local layers use RoPE base `rope.freq_base_swa` (default 10000) unscaled;
// global layers use `rope.freq_base` (1e6) with the file's linear scaling
// (4B and up: factor 8). A file without a window is all-global.
#include <cmath>
#include <string>

#include "model/arch.h"
#include "seam/error.h"

namespace seam {

void configure_gemma3(const GgufFile& f, Hparams& hp, Recipe& recipe) {
  read_common_hparams(f, "gemma3", "attention.layer_norm_rms_epsilon", hp);
  read_rope_scaling(f, "gemma3", hp);
  refuse_experts(f, "gemma3");
  read_sliding_window(f, "gemma3", 0, 6, hp);
  hp.rope_scale_swa = 1.0f;
  if (f.find("gemma3.attn_logit_softcapping")) {
    // The converter asserts gemma3 has none; a file that has one was made by
    // something else and would not mean what llama.cpp computes.
    throw Error(Errc::Unsupported,
                "gemma3.attn_logit_softcapping is set, but Gemma 3 has no attention soft-capping");
  }
  recipe.rope_neox = true;
  recipe.qk_norm = true;
  recipe.post_norms = true;
  recipe.embd_scale = std::sqrt(static_cast<float>(hp.n_embd));
  recipe.ffn_act = Activation::GeluTanh;
  recipe.attn_scale = gemma_attn_scale("gemma3", hp);
  if (f.find("gemma3.final_logit_softcapping")) {
    recipe.final_softcap = gemma_softcap(f, "gemma3.final_logit_softcapping", 0.0f);
  }
}

}  // namespace seam
