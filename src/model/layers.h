// The per-layer description of a model (LayerSpec, model/hparams.h): built
// once at admission from the global hyperparameters, adjusted by the
// architecture, then checked, so the forward pass can trust it.
#pragma once

#include <vector>

#include "model/hparams.h"

namespace seam {

// One LayerSpec per layer from what Hparams says for all of them: head
// counts and size, RoPE (the recipe's pair layout) (SWA layers with rope_base_swa /
// rope_scale_swa), the window of SWA layers, a dense FFN of n_ff or, with n_expert > 0, a MoE FFN
// of n_expert experts of n_ff_exp, each layer reading its own KV.
std::vector<LayerSpec> default_layers(const Hparams& hp, const Recipe& recipe);

// Throws Error(BadFormat) naming the layer and field when a spec cannot be
// run: zero or indivisible head counts, an odd or oversized n_rot, a kv_source
// that is not an earlier KV-owning attention layer with the same K/V width,
// zero FFN widths, n_expert_used outside [1, n_expert].
void check_layers(const ModelSpec& spec);

// The largest per-token widths over the layers: scratch buffers are sized by them.
struct LayerMaxima {
  std::uint32_t q_width = 0;
  std::uint32_t kv_width = 0;
  // the widest dense FFN: a dense layer's n_ff, n_ff_shexp or n_ff_dense (the
  // routed experts keep their rows in the backend's experts_ffn)
  std::uint32_t ff_width = 0;
  std::uint32_t n_expert = 0;
  std::uint32_t n_expert_used = 0;
};
LayerMaxima layer_maxima(const std::vector<LayerSpec>& layers);

}  // namespace seam
