// gpt-oss: OpenAI's open-weight mixture-of-experts models (gpt-oss-20b, -120b),
// as llama.cpp's converter writes them (`general.architecture` = "gpt-oss").
// From OpenAI's reference code and model card, checked against the GGUF layout:
//  - attention with q/k/v/o biases and a learned sink logit per head
//    (blk.N.attn_sinks.weight) that joins the softmax denominator;
//  - NEOX RoPE with YaRN (`rope.scaling.*`: factor 32 over 4096 positions),
//    the same rotation on every layer;
//  - alternating attention: even layers see a sliding window of
//    `attention.sliding_window` (128) positions, odd layers everything;
//  - the pre-FFN norm is stored as blk.N.post_attention_norm.weight;
//  - every FFN a mixture: router logits (with bias) -> the top k logits ->
//    softmax over those k; experts (with biases) apply the clamped SwiGLU
//    (compute/backend.h Activation::SwigluOai). The experts ship in MXFP4.
#include "model/arch.h"
#include "seam/error.h"

namespace seam {

void configure_gpt_oss(const GgufFile& f, Hparams& hp, Recipe& recipe) {
  read_common_hparams(f, "gpt-oss", "attention.layer_norm_rms_epsilon", hp);
  read_rope_scaling(f, "gpt-oss", hp);
  read_experts(f, "gpt-oss", hp);
  if (hp.n_expert == 0) {
    throw Error(Errc::BadFormat, "gpt-oss model without 'gpt-oss.expert_count'");
  }
  // Period 2: layer l uses the window unless l % 2 == 1 (llama.cpp's pattern).
  read_sliding_window(f, "gpt-oss", 0, 2, hp);
  if (hp.n_swa == 0) {
    throw Error(Errc::BadFormat, "gpt-oss model without 'gpt-oss.attention.sliding_window'");
  }
  hp.rope_base_swa = hp.rope_base;
  hp.rope_scale_swa = hp.rope_scale;
  recipe.rope_neox = true;
  recipe.qkv_bias = true;
  recipe.ffn_norm = "post_attention_norm";
  recipe.ffn_act = Activation::SwigluOai;
  recipe.routing = Routing::SoftmaxSelected;
}

// Beyond the standard rows: sinks, the output bias, router and expert biases.
void tensors_gpt_oss(const ModelSpec& s, ModelWeights& w, TensorTable& t) {
  for (std::uint32_t l = 0; l < s.hp.n_layer; ++l) {
    const LayerSpec& ls = s.layers[l];
    LayerWeights& L = w.layers[l];
    const std::string p = "blk." + std::to_string(l) + ".";
    const std::uint64_t e = s.hp.n_embd, n = ls.n_expert, ff = ls.n_ff;
    t.vec(p + "attn_sinks.weight", {ls.n_head}, true, &L.attn_sinks);
    t.vec(p + "attn_output.bias", {e}, true, &L.bo);
    t.vec(p + "ffn_gate_inp.bias", {n}, true, &L.ffn_gate_inp_b);
    t.vec(p + "ffn_gate_exps.bias", {ff, n}, true, &L.ffn_gate_exps_b);
    t.vec(p + "ffn_up_exps.bias", {ff, n}, true, &L.ffn_up_exps_b);
    t.vec(p + "ffn_down_exps.bias", {e, n}, true, &L.ffn_down_exps_b);
  }
}

}  // namespace seam
