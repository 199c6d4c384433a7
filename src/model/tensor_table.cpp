#include "model/tensor_table.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "compute/quant.h"
#include "core/half.h"
#include "seam/error.h"

namespace seam {

void TensorTable::vec(std::string name, std::vector<std::uint64_t> ne, bool required,
                      const float** dst) {
  TensorRow r;
  r.name = std::move(name);
  r.ne = std::move(ne);
  r.required = required;
  r.vec = dst;
  rows_.push_back(std::move(r));
}

void TensorTable::matrix(std::string name, std::uint64_t n_in, std::uint64_t n_out, bool required,
                         WeightView* dst) {
  TensorRow r;
  r.name = std::move(name);
  r.ne = {n_in, n_out};
  r.required = required;
  r.matrix = dst;
  rows_.push_back(std::move(r));
}

void TensorTable::fused(std::string name, std::uint64_t n_in,
                        std::vector<std::pair<WeightView*, std::int64_t>> parts, bool required) {
  TensorRow r;
  r.name = std::move(name);
  std::uint64_t n_out = 0;
  for (const auto& p : parts) n_out += static_cast<std::uint64_t>(p.second);
  r.ne = {n_in, n_out};
  r.required = required;
  r.parts = std::move(parts);
  rows_.push_back(std::move(r));
}

void TensorTable::experts(std::string name, std::uint64_t n_in, std::uint64_t n_out,
                          std::uint64_t n_expert, bool required, ExpertsView* dst) {
  fused_experts(std::move(name), n_in, {{dst, static_cast<std::int64_t>(n_out)}}, n_expert,
                required);
}

void TensorTable::fused_experts(std::string name, std::uint64_t n_in,
                                std::vector<std::pair<ExpertsView*, std::int64_t>> parts,
                                std::uint64_t n_expert, bool required) {
  TensorRow r;
  r.name = std::move(name);
  std::uint64_t n_out = 0;
  for (const auto& p : parts) n_out += static_cast<std::uint64_t>(p.second);
  r.ne = {n_in, n_out, n_expert};
  r.required = required;
  r.expert_parts = std::move(parts);
  rows_.push_back(std::move(r));
}

void standard_rows(const ModelSpec& s, ModelWeights& w, TensorTable& t) {
  const Hparams& hp = s.hp;
  const Recipe& rc = s.recipe;
  const std::uint64_t e = hp.n_embd, v = hp.n_vocab;
  t.matrix("token_embd.weight", e, v, true, &w.token_embd);
  t.vec("output_norm.weight", {e}, true, &w.output_norm);
  if (!s.tied_output) t.matrix("output.weight", e, v, true, &w.output);
  t.vec("rope_freqs.weight", {hp.n_rot / 2}, false, &w.rope_freqs);
  if (hp.longrope) {
    t.vec("rope_factors_long.weight", {hp.n_rot / 2}, true, &w.rope_long);
    t.vec("rope_factors_short.weight", {hp.n_rot / 2}, true, &w.rope_short);
  }
  for (std::uint32_t l = 0; l < hp.n_layer; ++l) {
    const LayerSpec& ls = s.layers[l];
    LayerWeights& L = w.layers[l];
    const std::string p = "blk." + std::to_string(l) + ".";
    const std::uint64_t q = ls.q_width(), kv = ls.kv_width(), ff = ls.n_ff;
    const bool owns_kv = ls.kv_source == l;
    if (ls.kind == LayerKind::Attention) {
      t.vec(p + "attn_norm.weight", {e}, true, &L.attn_norm);
      if (rc.fused_qkv) {
        t.fused(p + "attn_qkv.weight", e,
                {{&L.wq, std::int64_t(q)}, {&L.wk, std::int64_t(kv)}, {&L.wv, std::int64_t(kv)}},
                true);
      } else {
        t.matrix(p + "attn_q.weight", e, rc.gated_q ? 2 * q : q, true, &L.wq);
        // A layer that reads another's KV cache projects only its queries.
        if (owns_kv) {
          t.matrix(p + "attn_k.weight", e, kv, true, &L.wk);
          t.matrix(p + "attn_v.weight", e, kv, !rc.v_from_k, &L.wv);
        }
      }
      t.matrix(p + "attn_output.weight", q, e, true, &L.wo);
      if (rc.qkv_bias) {
        t.vec(p + "attn_q.bias", {q}, true, &L.bq);
        t.vec(p + "attn_k.bias", {kv}, true, &L.bk);
        t.vec(p + "attn_v.bias", {kv}, true, &L.bv);
      }
      if (rc.qk_norm) {
        t.vec(p + "attn_q_norm.weight", {ls.head_dim}, true, &L.q_norm);
        if (owns_kv) t.vec(p + "attn_k_norm.weight", {ls.head_dim}, true, &L.k_norm);
      }
      if (rc.post_norms) t.vec(p + "post_attention_norm.weight", {e}, true, &L.post_attn_norm);
    }
    t.vec(p + rc.ffn_norm + ".weight", {e}, true, &L.ffn_norm);
    if (ls.ffn == FfnKind::Moe) {
      const std::uint64_t n = ls.n_expert;
      t.matrix(p + "ffn_gate_inp.weight", e, n, true, &L.ffn_gate_inp);
      if (rc.fused_gate_up_exps) {
        t.fused_experts(p + "ffn_gate_up_exps.weight", e,
                        {{&L.ffn_gate_exps, std::int64_t(ff)}, {&L.ffn_up_exps, std::int64_t(ff)}},
                        n, true);
      } else {
        t.experts(p + "ffn_gate_exps.weight", e, ff, n, true, &L.ffn_gate_exps);
        t.experts(p + "ffn_up_exps.weight", e, ff, n, true, &L.ffn_up_exps);
      }
      t.experts(p + "ffn_down_exps.weight", ff, e, n, true, &L.ffn_down_exps);
    } else if (rc.fused_gate_up) {
      t.fused(p + "ffn_up.weight", e,
              {{&L.ffn_gate, std::int64_t(ff)}, {&L.ffn_up, std::int64_t(ff)}}, true);
    } else {
      t.matrix(p + "ffn_gate.weight", e, ff, true, &L.ffn_gate);
      t.matrix(p + "ffn_up.weight", e, ff, true, &L.ffn_up);
    }
    if (ls.ffn == FfnKind::Dense) t.matrix(p + "ffn_down.weight", ff, e, true, &L.ffn_down);
    if (rc.post_norms) t.vec(p + "post_ffw_norm.weight", {e}, true, &L.post_ffn_norm);
  }
}

namespace {

std::string shape_str(const std::vector<std::uint64_t>& ne) {
  std::string s = "[";
  for (std::size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

// Shapes equal up to trailing dimensions of 1: llama.cpp's converters write
// some vectors 2-D (Qwen3-Next's ffn_gate_inp_shexp is [n_embd, 1]), and its
// loader accepts them as the vectors they are.
bool same_shape(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b) {
  const std::size_t n = std::max(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    if ((i < a.size() ? a[i] : 1) != (i < b.size() ? b[i] : 1)) return false;
  }
  return true;
}

void check_tensor(const GgufTensor& t, const TensorRow& x) {
  if (!same_shape(t.ne, x.ne)) {
    throw Error(Errc::BadFormat, "tensor " + t.name + " has shape " + shape_str(t.ne) +
                                     ", expected " + shape_str(x.ne));
  }
  auto info = tensor_type_info(static_cast<std::uint32_t>(t.type));
  if (!info || !info->decodable) {
    throw Error(Errc::Unsupported, "tensor " + t.name + " has type " + quant::type_name(t.type) +
                                       ", which this build cannot decode");
  }
  if (x.vec && t.type != TensorType::F32 && t.type != TensorType::F16 &&
      t.type != TensorType::BF16) {
    throw Error(Errc::Unsupported, "tensor " + t.name + " is a vector stored as " +
                                       std::string(info->name) + "; expected F32, F16 or BF16");
  }
}

// One matrix of t: rows [0, n_out) of ne[0] elements each.
WeightView view_of(const GgufTensor& t, std::uint64_t n_out) {
  WeightView w;
  w.type = t.type;
  w.n_in = static_cast<std::int64_t>(t.ne[0]);
  w.n_out = static_cast<std::int64_t>(n_out);
  w.data = t.data;
  w.row_stride = static_cast<std::size_t>(*row_bytes(t.type, t.ne[0]));
  return w;
}

std::vector<float> to_f32(const GgufTensor& t) {
  const std::size_t n = static_cast<std::size_t>(t.n_elements());
  std::vector<float> out(n);
  const auto* p = reinterpret_cast<const unsigned char*>(t.data);
  for (std::size_t i = 0; i < n; ++i) {
    if (t.type == TensorType::F32) {
      std::memcpy(&out[i], p + 4 * i, 4);
    } else {
      std::uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      out[i] = t.type == TensorType::F16 ? fp16_to_f32(h) : bf16_to_f32(h);
    }
  }
  return out;
}

// By the expected shape x.ne: t may carry trailing dimensions of 1 beyond it.
void bind(const GgufTensor& t, const TensorRow& x, ModelWeights& w) {
  if (x.vec) {
    w.owned.push_back(to_f32(t));
    *x.vec = w.owned.back().data();
  } else if (x.matrix) {
    *x.matrix = view_of(t, x.ne[1]);
  } else if (!x.expert_parts.empty()) {
    const WeightView all = view_of(t, x.ne[1]);
    std::int64_t first = 0;
    for (const auto& [dst, n] : x.expert_parts) {
      dst->w = all;
      dst->w.data = all.data + static_cast<std::size_t>(first) * all.row_stride;
      dst->w.n_out = n;
      dst->n_expert = static_cast<std::int32_t>(x.ne[2]);
      dst->expert_stride = all.row_stride * x.ne[1];
      first += n;
    }
  } else {
    const WeightView all = view_of(t, x.ne[1]);
    std::int64_t first = 0;
    for (const auto& [dst, n] : x.parts) {
      *dst = all;
      dst->data = all.data + static_cast<std::size_t>(first) * all.row_stride;
      dst->n_out = n;
      first += n;
    }
  }
}

}  // namespace

void apply_table(const GgufFile& file, const TensorTable& table, ModelWeights& w, bool do_bind) {
  // Reserve so the pointers into `owned` stay valid while it grows.
  if (do_bind) w.owned.reserve(w.owned.size() + table.rows().size());
  for (const TensorRow& x : table.rows()) {
    const GgufTensor* t = file.find_tensor(x.name);
    if (!t) {
      if (x.required) throw Error(Errc::BadFormat, "required tensor " + x.name + " is missing");
      continue;
    }
    check_tensor(*t, x);
    if (do_bind) bind(*t, x, w);
  }
}

}  // namespace seam
