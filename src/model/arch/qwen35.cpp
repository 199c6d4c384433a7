// Gated-delta-net hybrids: qwen35 (Qwen3.5 dense), qwen35moe (Qwen3.5 MoE)
// and qwen3next (Qwen3-Next). Every `full_attention_interval`-th layer (4:
// layers 3, 7, ...) is a gated full-attention layer - attn_q holds per head
// [q | gate], out = Wo (attn * sigmoid(gate)), per-head q/k RMSNorm, NEOX RoPE
// on the first rope.dimension_count dims (Qwen3.5's IMROPE sections rotate
// text positions exactly like NEOX, every section reading the same position)
// - and the others are gated-delta-net layers (runtime/delta_net_layer.h,
// keys `ssm.*`, tensors attn_qkv, attn_gate, ssm_*). The pre-FFN norm is
// blk.N.post_attention_norm. The MoE variants add a shared expert
// (ffn_{gate,up,down}_shexp) scaled by sigmoid(ffn_gate_inp_shexp . h). The
// multi-token prediction blocks llama.cpp appends (`nextn_predict_layers`)
// are skipped.
#include <string>

#include "model/arch.h"
#include "seam/error.h"

namespace seam {

namespace {

std::uint32_t need_u32(const GgufFile& f, const std::string& key) {
  const auto v = f.get_uint(key);
  if (!v || *v == 0 || *v > (1u << 20)) {
    throw Error(Errc::BadFormat, "model metadata key '" + key + "' is missing or out of range");
  }
  return static_cast<std::uint32_t>(*v);
}

void configure_hybrid(const GgufFile& f, const std::string& arch, Hparams& hp, Recipe& recipe) {
  read_common_hparams(f, arch, "attention.layer_norm_rms_epsilon", hp);
  read_rope_scaling(f, arch, hp);
  recipe.rope_neox = true;
  recipe.qk_norm = true;
  recipe.gated_q = true;
  recipe.ffn_norm = "post_attention_norm";
  recipe.ffn_act = Activation::Silu;
  recipe.routing = Routing::Softmax;
  DeltaNetParams& p = hp.delta_net;
  p.d_conv = need_u32(f, arch + ".ssm.conv_kernel");
  p.d_state = need_u32(f, arch + ".ssm.state_size");
  p.n_head_k = need_u32(f, arch + ".ssm.group_count");
  p.n_head_v = need_u32(f, arch + ".ssm.time_step_rank");
  if (p.n_head_v % p.n_head_k != 0 || need_u32(f, arch + ".ssm.inner_size") != p.v_width()) {
    throw Error(Errc::BadFormat, arch + ".ssm.time_step_rank must be a multiple of " + arch +
                                     ".ssm.group_count, and ssm.inner_size must be "
                                     "time_step_rank * state_size");
  }
  if (p.d_conv < 2 || p.d_conv > 64) {
    throw Error(Errc::BadFormat, arch + ".ssm.conv_kernel must be in [2, 64]");
  }
  const auto nextn = f.get_uint(arch + ".nextn_predict_layers").value_or(0);
  if (nextn >= hp.n_layer) {
    throw Error(Errc::BadFormat, arch + ".nextn_predict_layers leaves no layers to run");
  }
  // The MTP blocks come last; only a draft model would run them.
  hp.n_layer -= static_cast<std::uint32_t>(nextn);
  read_experts(f, arch, hp);
  if (hp.n_expert > 0) {
    hp.n_ff_shexp = static_cast<std::uint32_t>(
        f.get_uint(arch + ".expert_shared_feed_forward_length").value_or(hp.n_ff_exp));
    if (hp.n_ff_shexp == 0 || hp.n_ff_shexp > (1u << 24)) {
      throw Error(Errc::BadFormat, arch + ".expert_shared_feed_forward_length is out of range");
    }
  }
}

// Layer l is attention when (l + 1) % full_attention_interval == 0.
void hybrid_layers(const GgufFile& f, const std::string& arch, ModelSpec& spec) {
  const auto iv = f.get_uint(arch + ".full_attention_interval").value_or(4);
  if (iv == 0 || iv > spec.layers.size() + 1) {
    throw Error(Errc::BadFormat, arch + ".full_attention_interval must be in [1, block_count]");
  }
  for (std::uint32_t l = 0; l < spec.layers.size(); ++l) {
    if ((l + 1) % iv != 0) spec.layers[l].kind = LayerKind::GatedDeltaNet;
  }
}

void hybrid_tensors(const ModelSpec& spec, ModelWeights& w, TensorTable& t) {
  const DeltaNetParams& p = spec.hp.delta_net;
  const std::uint64_t e = spec.hp.n_embd, hv = p.n_head_v;
  for (std::uint32_t l = 0; l < spec.layers.size(); ++l) {
    const LayerSpec& ls = spec.layers[l];
    LayerWeights& L = w.layers[l];
    const std::string b = "blk." + std::to_string(l) + ".";
    if (ls.n_ff_shexp > 0) {
      const std::uint64_t ff = ls.n_ff_shexp;
      t.matrix(b + "ffn_gate_shexp.weight", e, ff, true, &L.ffn_gate_shexp);
      t.matrix(b + "ffn_up_shexp.weight", e, ff, true, &L.ffn_up_shexp);
      t.matrix(b + "ffn_down_shexp.weight", ff, e, true, &L.ffn_down_shexp);
      t.vec(b + "ffn_gate_inp_shexp.weight", {e}, true, &L.ffn_gate_inp_shexp);
    }
    if (ls.kind != LayerKind::GatedDeltaNet) continue;
    DeltaNetWeights& d = L.delta_net;
    t.vec(b + "attn_norm.weight", {e}, true, &L.attn_norm);
    t.matrix(b + "attn_qkv.weight", e, p.conv_channels(), true, &d.qkv);
    t.matrix(b + "attn_gate.weight", e, p.v_width(), true, &d.gate);
    if (p.ba_fused) {
      t.matrix(b + "ssm_ba.weight", e, 2 * hv, true, &d.ba);
    } else {
      t.matrix(b + "ssm_beta.weight", e, hv, true, &d.beta);
      t.matrix(b + "ssm_alpha.weight", e, hv, true, &d.alpha);
    }
    t.vec(b + "ssm_conv1d.weight", {p.d_conv, p.conv_channels()}, true, &d.conv1d);
    t.vec(b + "ssm_dt.bias", {hv}, true, &d.dt_bias);
    t.vec(b + "ssm_a", {hv}, true, &d.a);
    t.vec(b + "ssm_norm.weight", {p.d_state}, true, &d.norm);
    t.matrix(b + "ssm_out.weight", p.v_width(), e, true, &d.out);
  }
}

}  // namespace

// qwen35 and qwen35moe: the converter reorders V heads so v-head h reads k-head h mod H_k.
void configure_qwen35(const GgufFile& f, Hparams& hp, Recipe& recipe) {
  configure_hybrid(f, "qwen35", hp, recipe);
  if (hp.n_expert > 0) {
    throw Error(Errc::BadFormat,
                "qwen35 has a dense FFN but the file sets qwen35.expert_count; "
                "mixture-of-experts Qwen3.5 files are 'qwen35moe'");
  }
  hp.delta_net.k_head_map = KHeadMap::Tiled;
}
void configure_qwen35moe(const GgufFile& f, Hparams& hp, Recipe& recipe) {
  configure_hybrid(f, "qwen35moe", hp, recipe);
  if (hp.n_expert == 0) {
    throw Error(Errc::BadFormat, "qwen35moe model without 'qwen35moe.expert_count'");
  }
  hp.delta_net.k_head_map = KHeadMap::Tiled;
}
// qwen3next keeps HF's order (v-head h reads k-head h / (H_v / H_k)) and one
// fused ssm_ba projection.
void configure_qwen3next(const GgufFile& f, Hparams& hp, Recipe& recipe) {
  configure_hybrid(f, "qwen3next", hp, recipe);
  if (hp.n_expert == 0) {
    throw Error(Errc::BadFormat, "qwen3next model without 'qwen3next.expert_count'");
  }
  hp.delta_net.k_head_map = KHeadMap::Grouped;
  hp.delta_net.ba_fused = true;
}

void layers_qwen35(const GgufFile& f, ModelSpec& spec) { hybrid_layers(f, "qwen35", spec); }
void layers_qwen35moe(const GgufFile& f, ModelSpec& spec) { hybrid_layers(f, "qwen35moe", spec); }
void layers_qwen3next(const GgufFile& f, ModelSpec& spec) { hybrid_layers(f, "qwen3next", spec); }
void tensors_hybrid(const ModelSpec& spec, ModelWeights& w, TensorTable& t) {
  hybrid_tensors(spec, w, t);
}

}  // namespace seam
