// llama: Llama 1/2/3, Mistral, SmolLM, TinyLlama, ... RMSNorm, adjacent-pair
// RoPE (as the converters store Q/K), GQA, SwiGLU, tied or separate output.
// Llama 3 RoPE scaling arrives as the `rope_freqs.weight` tensor.
#include <string>

#include "model/arch.h"
#include "seam/error.h"

namespace seam {

void configure_llama(const GgufFile& f, Hparams& hp, Recipe& recipe) {
  read_common_hparams(f, "llama", "attention.layer_norm_rms_epsilon", hp);
  recipe.rope_neox = false;
  recipe.ffn_act = Activation::Silu;
  // Scaling types other than Llama 3's frequency factors change the math.
  if (auto scaling = f.get_string("llama.rope.scaling.type")) {
    if (*scaling != "none" && *scaling != "llama3") {
      throw Error(Errc::Unsupported, "llama rope scaling type '" + *scaling + "' is not supported");
    }
  }
  if (auto n_expert = f.get_uint("llama.expert_count"); n_expert && *n_expert > 0) {
    throw Error(Errc::Unsupported, "mixture-of-experts llama models (expert_count " +
                                       std::to_string(*n_expert) + ") are not supported");
  }
}

}  // namespace seam
