#include "model/layers.h"

#include <algorithm>
#include <string>

#include "compute/ops.h"
#include "seam/error.h"

namespace seam {

namespace {

// The rotation of every layer: hp's base and scale, or the SWA layers' own.
// YaRN's attention factor belongs to the scaled rotation only, so an SWA
// layer that rotates unscaled (gemma3's local layers) drops it.
RopeParams layer_rope(const Hparams& hp, const Recipe& recipe, bool swa) {
  RopeParams r;
  r.neox = recipe.rope_neox;
  r.n_rot = static_cast<std::int32_t>(hp.n_rot);
  r.freq_base = swa ? hp.rope_base_swa : hp.rope_base;
  r.freq_scale = swa ? hp.rope_scale_swa : hp.rope_scale;
  r.attn_factor = hp.rope_attn_factor * hp.yarn_mscale;
  if (swa && hp.rope_scale_swa != hp.rope_scale) r.attn_factor = hp.rope_attn_factor;
  r.ext_factor = hp.yarn_ext_factor;
  if (hp.yarn_ext_factor != 0.0f) {
    ops::yarn_corr_dims(r.n_rot, hp.n_ctx_orig, r.freq_base, hp.yarn_beta_fast, hp.yarn_beta_slow,
                        &r.corr_low, &r.corr_high);
  }
  return r;
}

[[noreturn]] void bad_layer(std::uint32_t l, const std::string& what) {
  throw Error(Errc::BadFormat, "layer " + std::to_string(l) + ": " + what);
}

}  // namespace

std::vector<LayerSpec> default_layers(const Hparams& hp, const Recipe& recipe) {
  std::vector<LayerSpec> out(hp.n_layer);
  for (std::uint32_t l = 0; l < hp.n_layer; ++l) {
    LayerSpec& L = out[l];
    const bool swa = hp.is_swa(l);
    L.n_head = hp.n_head;
    L.n_head_kv = hp.n_head_kv;
    L.head_dim = hp.head_dim;
    L.rope = layer_rope(hp, recipe, swa);
    L.n_swa = swa ? hp.n_swa : 0;
    L.kv_source = l;
    if (hp.n_expert > 0) {
      L.ffn = FfnKind::Moe;
      L.n_ff = hp.n_ff_exp;
      L.n_expert = hp.n_expert;
      L.n_expert_used = hp.n_expert_used;
      L.n_ff_shexp = hp.n_ff_shexp;
    } else {
      L.n_ff = hp.n_ff;
    }
  }
  return out;
}

void check_layers(const ModelSpec& spec) {
  if (spec.layers.size() != spec.hp.n_layer) {
    throw Error(Errc::BadFormat, std::to_string(spec.layers.size()) + " layer descriptions for " +
                                     std::to_string(spec.hp.n_layer) + " layers");
  }
  for (std::uint32_t l = 0; l < spec.layers.size(); ++l) {
    const LayerSpec& L = spec.layers[l];
    if (L.kind == LayerKind::Attention) {
      if (L.n_head == 0 || L.n_head_kv == 0 || L.n_head % L.n_head_kv != 0) {
        bad_layer(l, "KV head count " + std::to_string(L.n_head_kv) +
                         " must be positive and divide the head count " + std::to_string(L.n_head));
      }
      if (L.head_dim == 0 || L.head_dim > 4096) {
        bad_layer(l, "head size " + std::to_string(L.head_dim) + " is not in [1, 4096]");
      }
      if (L.rope.n_rot < 0 || L.rope.n_rot % 2 != 0 ||
          static_cast<std::uint32_t>(L.rope.n_rot) > L.head_dim) {
        bad_layer(l, "rope dimension count " + std::to_string(L.rope.n_rot) +
                         " must be even and at most the head size " + std::to_string(L.head_dim));
      }
      if (L.kv_source > l) bad_layer(l, "reads the KV cache of a later layer");
      if (L.kv_source != l) {
        const LayerSpec& S = spec.layers[L.kv_source];
        if (S.kind != LayerKind::Attention || S.kv_source != L.kv_source ||
            S.kv_width() != L.kv_width() || S.head_dim != L.head_dim) {
          bad_layer(l, "shares the KV cache of layer " + std::to_string(L.kv_source) +
                           ", which owns no cache of the same head size and width");
        }
      }
    }
    if (L.kind == LayerKind::GatedDeltaNet) {
      const DeltaNetParams& p = spec.hp.delta_net;
      if (p.d_conv < 2 || p.d_state == 0 || p.n_head_k == 0 || p.n_head_v == 0 ||
          p.n_head_v % p.n_head_k != 0) {
        bad_layer(l, "gated-delta-net sizes (conv width " + std::to_string(p.d_conv) + ", state " +
                         std::to_string(p.d_state) + ", heads " + std::to_string(p.n_head_k) + "/" +
                         std::to_string(p.n_head_v) + ") cannot be run");
      }
    }
    if (L.n_ff == 0) {
      bad_layer(l, L.ffn == FfnKind::Moe
                       ? "has no expert feed-forward width (expert_feed_forward_length)"
                       : "has no feed-forward width (feed_forward_length)");
    }
    if (L.ffn == FfnKind::Moe && (L.n_expert_used == 0 || L.n_expert_used > L.n_expert)) {
      bad_layer(l, "uses " + std::to_string(L.n_expert_used) + " of " + std::to_string(L.n_expert) +
                       " experts; it must use 1 to all of them");
    }
  }
}

LayerMaxima layer_maxima(const std::vector<LayerSpec>& layers) {
  LayerMaxima m;
  for (const LayerSpec& L : layers) {
    m.q_width = std::max(m.q_width, L.q_width());
    m.kv_width = std::max(m.kv_width, L.kv_width());
    const std::uint32_t dense_ff = L.ffn == FfnKind::Moe ? 0 : L.n_ff;
    m.ff_width = std::max({m.ff_width, dense_ff, L.n_ff_shexp, L.n_ff_dense});
    m.n_expert = std::max(m.n_expert, L.n_expert);
    m.n_expert_used = std::max(m.n_expert_used, L.n_expert_used);
  }
  return m;
}

}  // namespace seam
