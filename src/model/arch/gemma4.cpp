// gemma4: Gemma 4 "E" models (E2B, E4B). gemma3's block (sqrt(n_embd)
// embedding scale, post-attention and post-FFN norms, GELU(tanh), NEOX RoPE,
// per-head q/k RMSNorm) with, per layer:
// - local (sliding-window) layers of head size `attention.key_length_swa`,
//   RoPE `rope.dimension_count_swa` dims at `rope.freq_base_swa`; global
//   layers of `attention.key_length`, `rope.dimension_count` dims at
//   `rope.freq_base` with rope_freqs.weight as frequency divisors (E2B's
//   "proportional" RoPE: a quarter of the pairs rotate, the rest have divisor
//   1e30). Which layers are local: `attention.sliding_window_pattern`, one flag
//   per layer (true = local).
// - FFN widths and KV head counts as per-layer arrays (or one value for all).
// - The last `attention.shared_kv_layers` layers own no KV cache: each reads the
//   cache of the last KV-owning layer of its own kind (local or global).
// - Per-Layer Embeddings (runtime/per_layer_embd.h) and an optional
//   blk.N.layer_output_scale that scales the residual stream after the block.
// Attention scale 1 (the q/k norms set the logit size), V heads RMS-normed
// without a weight, final logits soft-capped. Norm weights are stored as they
// apply (no +1 baked in as for gemma2/3), so they are plain RMSNorms too.
// The mixture-of-experts model (26B-A4B, `expert_count`) runs, in every layer,
// its dense MLP beside routed experts (runtime/forward.cpp): the router reads
// the residual through a weightless RMS norm, / sqrt(n_embd), times
// blk.N.ffn_gate_inp.scale; softmax, top k, renormalised; each expert's output
// is scaled by blk.N.ffn_down_exps.scale; the experts read
// pre_ffw_norm_2(residual), and the two branches are normed by post_ffw_norm_1
// and post_ffw_norm_2 before their sum meets post_ffw_norm.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <variant>
#include <vector>

#include "model/arch.h"
#include "seam/error.h"

namespace seam {

namespace {

const std::string kArch = "gemma4";

std::uint32_t checked_u32(const std::string& key, std::uint64_t v) {
  if (v == 0 || v > std::numeric_limits<std::uint32_t>::max() / 4) {
    throw Error(Errc::BadFormat,
                "model metadata key '" + key + "' has an invalid value " + std::to_string(v));
  }
  return static_cast<std::uint32_t>(v);
}

// `gemma4.<key>` as a positive integer, else `fallback` (0: the key is required).
std::uint32_t read_u32(const GgufFile& f, const std::string& key, std::uint32_t fallback) {
  const std::string full = kArch + "." + key;
  const auto v = f.get_uint(full);
  if (v) return checked_u32(full, *v);
  if (fallback == 0 || f.find(full)) {
    throw Error(Errc::BadFormat, "model metadata lacks a positive integer '" + full + "'");
  }
  return fallback;
}

// `gemma4.<key>` for every layer: an array of n_layer positive integers, or
// one integer for all; `fallback` when absent (0: required).
std::vector<std::uint32_t> read_per_layer(const GgufFile& f, const std::string& key,
                                          std::uint32_t n_layer, std::uint32_t fallback) {
  const std::string full = kArch + "." + key;
  const GgufValue* value = f.find(full);
  if (!value || value->type != GgufValueType::ARRAY)
    return std::vector<std::uint32_t>(n_layer, read_u32(f, key, fallback));
  const GgufArray* a = &std::get<GgufArray>(value->v);
  if (a->items.size() != n_layer) {
    throw Error(Errc::BadFormat, "'" + full + "' has " + std::to_string(a->items.size()) +
                                     " entries for " + std::to_string(n_layer) + " layers");
  }
  std::vector<std::uint32_t> out(n_layer);
  for (std::uint32_t l = 0; l < n_layer; ++l) {
    const GgufValue& v = a->items[l];
    std::uint64_t u = 0;
    if (const auto* pu = std::get_if<std::uint64_t>(&v.v)) {
      u = *pu;
    } else if (const auto* ps = std::get_if<std::int64_t>(&v.v); ps && *ps > 0) {
      u = static_cast<std::uint64_t>(*ps);
    }
    out[l] = checked_u32(full + "[" + std::to_string(l) + "]", u);
  }
  return out;
}

}  // namespace

void configure_gemma4(const GgufFile& f, Hparams& hp, Recipe& recipe) {
  hp.n_embd = read_u32(f, "embedding_length", 0);
  hp.n_layer = read_u32(f, "block_count", 0);
  hp.n_head = read_u32(f, "attention.head_count", 0);
  hp.n_ctx_train = read_u32(f, "context_length", 2048);
  // The per-layer values go to the LayerSpecs (layers_gemma4); hp keeps the
  // global layers' head size and the widest values.
  const auto kv = read_per_layer(f, "attention.head_count_kv", hp.n_layer, hp.n_head);
  hp.n_head_kv = *std::max_element(kv.begin(), kv.end());
  const auto ff = read_per_layer(f, "feed_forward_length", hp.n_layer, 0);
  hp.n_ff = *std::max_element(ff.begin(), ff.end());
  hp.head_dim = read_u32(f, "attention.key_length", 0);
  if (read_u32(f, "attention.value_length", hp.head_dim) != hp.head_dim) {
    throw Error(Errc::Unsupported,
                "gemma4 key and value lengths differ; this build needs them "
                "equal");
  }
  hp.n_rot = read_u32(f, "rope.dimension_count", hp.head_dim);
  const std::string eps_key = kArch + ".attention.layer_norm_rms_epsilon";
  const auto eps = f.get_float(eps_key);
  if (!eps || !(*eps > 0.0 && *eps < 1.0)) {
    throw Error(Errc::BadFormat, "'" + eps_key + "' must be present and in (0, 1)");
  }
  hp.norm_eps = static_cast<float>(*eps);
  hp.rope_base = static_cast<float>(f.get_float(kArch + ".rope.freq_base").value_or(1e6));
  if (!(hp.rope_base > 0.0f))
    throw Error(Errc::BadFormat, "gemma4.rope.freq_base must be positive");
  read_rope_scaling(f, kArch, hp);
  if (hp.yarn_ext_factor != 0.0f) {
    throw Error(Errc::Unsupported, "gemma4 with YaRN rope scaling is not supported by this build");
  }
  const GgufValue* pattern = f.find(kArch + ".attention.sliding_window_pattern");
  if (f.get_uint(kArch + ".attention.sliding_window").value_or(0) > 0 &&
      (!pattern || pattern->type != GgufValueType::ARRAY)) {
    throw Error(Errc::BadFormat,
                "gemma4 has a sliding window but no per-layer "
                "'gemma4.attention.sliding_window_pattern'");
  }
  read_sliding_window(f, kArch, 0, 1, hp);
  hp.rope_scale_swa = 1.0f;  // local layers rotate unscaled, as gemma3's
  const auto ple = f.get_uint(kArch + ".embedding_length_per_layer_input").value_or(0);
  if (ple > 65536) {
    throw Error(Errc::BadFormat, "'gemma4.embedding_length_per_layer_input' = " +
                                     std::to_string(ple) + " is out of range (at most 65536)");
  }
  hp.n_embd_ple = static_cast<std::uint32_t>(ple);
  read_experts(f, kArch, hp);
  recipe.routing = Routing::Softmax;

  recipe.rope_neox = true;
  recipe.qk_norm = true;
  recipe.post_norms = true;
  recipe.embd_scale = std::sqrt(static_cast<float>(hp.n_embd));
  recipe.ffn_act = Activation::GeluTanh;
  recipe.attn_scale = 1.0f;
  recipe.v_norm = true;
  recipe.v_from_k = true;
  if (f.find(kArch + ".final_logit_softcapping")) {
    recipe.final_softcap = gemma_softcap(f, kArch + ".final_logit_softcapping", 0.0f);
  }
}

void layers_gemma4(const GgufFile& f, ModelSpec& spec) {
  const Hparams& hp = spec.hp;
  const std::uint32_t n = hp.n_layer;
  const auto kv = read_per_layer(f, "attention.head_count_kv", n, hp.n_head);
  const auto ff = read_per_layer(f, "feed_forward_length", n, 0);
  const bool any_swa =
      std::any_of(hp.swa_layers.begin(), hp.swa_layers.end(), [](bool b) { return b; });
  std::uint32_t hd_swa = hp.head_dim, rot_swa = hp.n_rot;
  if (any_swa) {
    hd_swa = read_u32(f, "attention.key_length_swa", 0);
    if (read_u32(f, "attention.value_length_swa", hd_swa) != hd_swa) {
      throw Error(Errc::Unsupported,
                  "gemma4 local layers' key and value lengths differ; this "
                  "build needs them equal");
    }
    rot_swa = read_u32(f, "rope.dimension_count_swa", hd_swa);
  }
  for (std::uint32_t l = 0; l < n; ++l) {
    LayerSpec& L = spec.layers[l];
    L.n_head_kv = kv[l];
    // With experts, n_ff stays their width and the dense MLP runs beside them.
    (hp.n_expert > 0 ? L.n_ff_dense : L.n_ff) = ff[l];
    if (hp.is_swa(l)) {
      L.head_dim = hd_swa;
      L.rope.n_rot = static_cast<std::int32_t>(rot_swa);
      L.rope_factors = false;  // rope_freqs.weight is the global layers' (one size only)
    }
  }
  const auto shared = f.get_uint(kArch + ".attention.shared_kv_layers").value_or(0);
  if (shared >= n) {
    throw Error(Errc::BadFormat, "'gemma4.attention.shared_kv_layers' = " + std::to_string(shared) +
                                     " leaves no layer of the " + std::to_string(n) +
                                     " owning a KV cache");
  }
  const std::uint32_t first = n - static_cast<std::uint32_t>(shared);
  for (std::uint32_t l = first; l < n; ++l) {
    std::uint32_t src = first;
    for (std::uint32_t j = first; j-- > 0;) {
      if (hp.is_swa(j) == hp.is_swa(l)) {
        src = j;
        break;
      }
    }
    if (src == first) {
      throw Error(Errc::BadFormat, "gemma4 layer " + std::to_string(l) +
                                       " shares the KV cache of an earlier layer of its kind, "
                                       "but no earlier layer is " +
                                       (hp.is_swa(l) ? "local" : "global"));
    }
    spec.layers[l].kv_source = src;
  }
}

void tensors_gemma4(const ModelSpec& s, ModelWeights& w, TensorTable& t) {
  const Hparams& hp = s.hp;
  const std::uint64_t e = hp.n_embd, p = hp.n_embd_ple;
  for (std::uint32_t l = 0; l < hp.n_layer; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    LayerWeights& L = w.layers[l];
    t.vec(b + "layer_output_scale.weight", {1}, false, &L.out_scale);
    const LayerSpec& ls = s.layers[l];
    if (ls.n_ff_dense == 0) continue;
    const std::uint64_t ff = ls.n_ff_dense;
    t.matrix(b + "ffn_gate.weight", e, ff, true, &L.ffn_gate);
    t.matrix(b + "ffn_up.weight", e, ff, true, &L.ffn_up);
    t.matrix(b + "ffn_down.weight", ff, e, true, &L.ffn_down);
    t.vec(b + "ffn_gate_inp.scale", {e}, true, &L.ffn_gate_inp_scale);
    t.vec(b + "ffn_down_exps.scale", {ls.n_expert}, true, &L.ffn_down_exps_scale);
    t.vec(b + "pre_ffw_norm_2.weight", {e}, true, &L.pre_ffn_norm_2);
    t.vec(b + "post_ffw_norm_1.weight", {e}, true, &L.post_ffn_norm_1);
    t.vec(b + "post_ffw_norm_2.weight", {e}, true, &L.post_ffn_norm_2);
  }
  if (p == 0) return;
  t.matrix("per_layer_token_embd.weight", hp.n_layer * p, hp.n_vocab, true, &w.ple_token_embd);
  t.matrix("per_layer_model_proj.weight", e, hp.n_layer * p, true, &w.ple_model_proj);
  t.vec("per_layer_proj_norm.weight", {p}, true, &w.ple_proj_norm);
  for (std::uint32_t l = 0; l < hp.n_layer; ++l) {
    LayerWeights& L = w.layers[l];
    const std::string b = "blk." + std::to_string(l) + ".";
    t.matrix(b + "inp_gate.weight", e, p, true, &L.ple_gate);
    t.matrix(b + "proj.weight", p, e, true, &L.ple_proj);
    t.vec(b + "post_norm.weight", {e}, true, &L.ple_post_norm);
  }
}

}  // namespace seam
