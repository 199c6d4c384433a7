// gemma2: Gemma 2 (2B, 9B, 27B). Llama's block plus: embeddings scaled by
// sqrt(n_embd); RMSNorms after attention and after the FFN
// (blk.N.post_attention_norm / post_ffw_norm) before each residual add;
// GELU(tanh) gate; attention scores soft-capped (`gemma2.attn_logit_softcapping`,
// default 50) and final logits soft-capped (`gemma2.final_logit_softcapping`,
// default 30); NEOX RoPE; output tied to token_embd; sliding-window attention
// (`gemma2.attention.sliding_window`, default 4096) on the even layers
// (period 2: layer l is local unless l % 2 == 1).
//
// Gemma's HF norms compute x * (1 + w); convert_hf_to_gguf stores w + 1, so
// every norm here is a plain RMSNorm of the stored weight.
#include <cmath>
#include <string>

#include "format/gemma_attention.h"
#include "model/arch.h"
#include "seam/error.h"

namespace seam {

float gemma_softcap(const GgufFile& f, const std::string& key, float fallback) {
  const double v = f.get_float(key).value_or(fallback);
  if (!(v > 0.0 && v < 1e9)) {
    throw Error(Errc::BadFormat, "'" + key + "' = " + std::to_string(v) + " must be positive");
  }
  return static_cast<float>(v);
}

float gemma_attn_scale(std::string_view arch, const Hparams& hp) {
  const auto scalar =
      gemma::query_pre_attn_scalar(arch, hp.n_layer, hp.n_embd, hp.n_head, hp.head_dim);
  return 1.0f / std::sqrt(static_cast<float>(scalar));
}

void configure_gemma2(const GgufFile& f, Hparams& hp, Recipe& recipe) {
  read_common_hparams(f, "gemma2", "attention.layer_norm_rms_epsilon", hp);
  read_rope_scaling(f, "gemma2", hp);
  refuse_experts(f, "gemma2");
  read_sliding_window(f, "gemma2", 4096, 2, hp);
  recipe.rope_neox = true;
  recipe.post_norms = true;
  recipe.embd_scale = std::sqrt(static_cast<float>(hp.n_embd));
  recipe.ffn_act = Activation::GeluTanh;
  recipe.attn_softcap = gemma_softcap(f, "gemma2.attn_logit_softcapping", 50.0f);
  recipe.final_softcap = gemma_softcap(f, "gemma2.final_logit_softcapping", 30.0f);
  recipe.attn_scale = gemma_attn_scale("gemma2", hp);
}

}  // namespace seam
