// mistral3: the text models of Mistral Small 3.x and Ministral 3 as llama.cpp
// converts them. Llama's block (adjacent-pair RoPE, SwiGLU, GQA, head size
// from `attention.key_length`), usually with YaRN RoPE scaling whose
// attention factor comes from `rope.scaling.yarn_log_multiplier` (HF's
// mscale_all_dim), and optionally Llama 4's attention temperature: with
// `mistral3.attention.temperature_scale` = beta set, q at position p is
// multiplied by 1 + beta * ln(1 + floor(p / n_ctx_orig)) after RoPE.
//
// llama.cpp also accepts output/FFN biases and LongRoPE tensors for this
// architecture; no released model has them, so they are refused by name.
#include <string>

#include "model/arch.h"
#include "seam/error.h"

namespace seam {

void configure_mistral3(const GgufFile& f, Hparams& hp, Recipe& recipe) {
  read_common_hparams(f, "mistral3", "attention.layer_norm_rms_epsilon", hp);
  read_rope_scaling(f, "mistral3", hp);
  refuse_experts(f, "mistral3");
  const std::string key = "mistral3.attention.temperature_scale";
  const double beta = f.get_float(key).value_or(0.0);
  if (!(beta >= 0.0 && beta < 1e3)) {
    throw Error(Errc::BadFormat,
                "'" + key + "' = " + std::to_string(beta) + " is not in [0, 1000)");
  }
  hp.attn_temp_scale = static_cast<float>(beta);
  for (const char* name : {"blk.0.attn_output.bias", "blk.0.ffn_gate.bias", "blk.0.ffn_up.bias",
                           "blk.0.ffn_down.bias", "rope_factors_long.weight"}) {
    if (f.find_tensor(name)) {
      throw Error(Errc::Unsupported,
                  std::string("mistral3 tensor ") + name + " is not supported by this build");
    }
  }
  recipe.rope_neox = false;
  recipe.ffn_act = Activation::Silu;
}

}  // namespace seam
