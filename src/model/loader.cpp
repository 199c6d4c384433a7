#include "model/loader.h"

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "compute/quant.h"
#include "core/half.h"
#include "model/arch.h"
#include "seam/error.h"

namespace seam {

namespace {

std::string shape_str(const std::vector<std::uint64_t>& ne) {
  std::string s = "[";
  for (std::size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

struct Expect {
  std::string name;
  std::vector<std::uint64_t> ne;
  bool required;
  bool matrix;  // 2-D weight used by matmul/get_rows; else a 1-D f32 vector
};

// The tensors a recipe needs, with the shapes it needs them in (ne order:
// row length first).
std::vector<Expect> expected_tensors(const ModelSpec& s) {
  const Hparams& hp = s.hp;
  const std::uint64_t e = hp.n_embd, v = hp.n_vocab, ff = hp.n_ff;
  const std::uint64_t q = std::uint64_t{hp.n_head} * hp.head_dim;
  const std::uint64_t kv = std::uint64_t{hp.n_head_kv} * hp.head_dim;
  std::vector<Expect> out = {
      {"token_embd.weight", {e, v}, true, true},
      {"output_norm.weight", {e}, true, false},
      {"output.weight", {e, v}, !s.tied_output, true},
      {"rope_freqs.weight", {hp.n_rot / 2}, false, false},
      {"rope_factors_long.weight", {hp.n_rot / 2}, hp.longrope, false},
      {"rope_factors_short.weight", {hp.n_rot / 2}, hp.longrope, false},
  };
  for (std::uint32_t l = 0; l < hp.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    out.push_back({p + "attn_norm.weight", {e}, true, false});
    if (s.recipe.fused_qkv) {
      out.push_back({p + "attn_qkv.weight", {e, q + 2 * kv}, true, true});
    } else {
      out.push_back({p + "attn_q.weight", {e, q}, true, true});
      out.push_back({p + "attn_k.weight", {e, kv}, true, true});
      out.push_back({p + "attn_v.weight", {e, kv}, true, true});
    }
    out.push_back({p + "attn_output.weight", {q, e}, true, true});
    if (s.recipe.qkv_bias) {
      out.push_back({p + "attn_q.bias", {q}, true, false});
      out.push_back({p + "attn_k.bias", {kv}, true, false});
      out.push_back({p + "attn_v.bias", {kv}, true, false});
    }
    if (s.recipe.qk_norm) {
      out.push_back({p + "attn_q_norm.weight", {hp.head_dim}, true, false});
      out.push_back({p + "attn_k_norm.weight", {hp.head_dim}, true, false});
    }
    if (s.recipe.post_norms) {
      out.push_back({p + "post_attention_norm.weight", {e}, true, false});
      out.push_back({p + "post_ffw_norm.weight", {e}, true, false});
    }
    out.push_back({p + "ffn_norm.weight", {e}, true, false});
    if (s.recipe.fused_gate_up) {
      out.push_back({p + "ffn_up.weight", {e, 2 * ff}, true, true});
    } else {
      out.push_back({p + "ffn_gate.weight", {e, ff}, true, true});
      out.push_back({p + "ffn_up.weight", {e, ff}, true, true});
    }
    out.push_back({p + "ffn_down.weight", {ff, e}, true, true});
  }
  return out;
}

void check_tensor(const GgufTensor& t, const Expect& x) {
  if (t.ne != x.ne) {
    throw Error(Errc::BadFormat, "tensor " + t.name + " has shape " + shape_str(t.ne) +
                                     ", expected " + shape_str(x.ne));
  }
  auto info = tensor_type_info(static_cast<std::uint32_t>(t.type));
  if (!info || !info->decodable) {
    throw Error(Errc::Unsupported, "tensor " + t.name + " has type " + quant::type_name(t.type) +
                                       ", which this build cannot decode");
  }
  if (!x.matrix && t.type != TensorType::F32 && t.type != TensorType::F16 &&
      t.type != TensorType::BF16) {
    throw Error(Errc::Unsupported, "tensor " + t.name + " is a vector stored as " +
                                       std::string(info->name) + "; expected F32, F16 or BF16");
  }
}

WeightView view_of(const GgufTensor& t) {
  WeightView w;
  w.type = t.type;
  w.n_in = static_cast<std::int64_t>(t.ne[0]);
  w.n_out = static_cast<std::int64_t>(t.n_rows());
  w.data = t.data;
  w.row_stride = static_cast<std::size_t>(*row_bytes(t.type, t.ne[0]));
  return w;
}

// Rows [first, first + n) of a 2-D weight: a fused tensor's parts.
WeightView row_range(const WeightView& w, std::int64_t first, std::int64_t n) {
  WeightView part = w;
  part.data = w.data + static_cast<std::size_t>(first) * w.row_stride;
  part.n_out = n;
  return part;
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

}  // namespace

ModelSpec admit_model(const GgufFile& file) {
  ModelSpec s;
  auto arch = file.get_string("general.architecture");
  if (!arch) throw Error(Errc::BadFormat, "model metadata lacks 'general.architecture'");
  const ArchSpec* spec = find_arch(*arch);
  if (!spec) throw Error(Errc::Unsupported, "unsupported architecture '" + *arch + "'");
  s.arch = *arch;
  spec->configure(file, s.hp, s.recipe);

  const GgufTensor* embd = file.find_tensor("token_embd.weight");
  if (!embd) throw Error(Errc::BadFormat, "required tensor token_embd.weight is missing");
  if (embd->ne.size() != 2) {
    throw Error(Errc::BadFormat, "tensor token_embd.weight has shape " + shape_str(embd->ne) +
                                     ", expected 2 dimensions");
  }
  s.hp.n_vocab = static_cast<std::uint32_t>(embd->ne[1]);
  if (const GgufArray* tokens = file.get_array("tokenizer.ggml.tokens")) {
    if (tokens->items.size() > s.hp.n_vocab) {
      throw Error(Errc::BadFormat, "the vocabulary has " + std::to_string(tokens->items.size()) +
                                       " tokens but token_embd.weight only " +
                                       std::to_string(s.hp.n_vocab) + " rows");
    }
  }
  s.tied_output = file.find_tensor("output.weight") == nullptr;
  // Every layer has several tensors: a count the tensor table cannot hold is
  // refused before anything is sized by it (a hostile header could otherwise
  // make the admission check build millions of expected-tensor entries).
  if (s.hp.n_layer > file.tensors().size()) {
    throw Error(Errc::BadFormat, "'" + *arch + ".block_count' = " + std::to_string(s.hp.n_layer) +
                                     " layers, but the file has only " +
                                     std::to_string(file.tensors().size()) +
                                     " tensors; the header is corrupt");
  }

  for (const Expect& x : expected_tensors(s)) {
    const GgufTensor* t = file.find_tensor(x.name);
    if (!t) {
      if (x.required) throw Error(Errc::BadFormat, "required tensor " + x.name + " is missing");
      continue;
    }
    check_tensor(*t, x);
  }
  return s;
}

ModelWeights bind_weights(const GgufFile& file, const ModelSpec& s) {
  ModelWeights w;
  // Reserve so the pointers into `owned` stay valid while it grows.
  const std::vector<Expect> expects = expected_tensors(s);
  w.owned.reserve(expects.size());
  auto matrix = [&](const std::string& name) { return view_of(*file.find_tensor(name)); };
  auto vec = [&](const std::string& name) -> const float* {
    const GgufTensor* t = file.find_tensor(name);
    if (!t) return nullptr;
    w.owned.push_back(to_f32(*t));
    return w.owned.back().data();
  };
  w.token_embd = matrix("token_embd.weight");
  w.output_norm = vec("output_norm.weight");
  w.output = s.tied_output ? w.token_embd : matrix("output.weight");
  w.rope_freqs = vec("rope_freqs.weight");
  if (s.hp.longrope) {
    w.rope_long = vec("rope_factors_long.weight");
    w.rope_short = vec("rope_factors_short.weight");
  }
  w.layers.resize(s.hp.n_layer);
  for (std::uint32_t l = 0; l < s.hp.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LayerWeights& L = w.layers[l];
    L.attn_norm = vec(p + "attn_norm.weight");
    if (s.recipe.fused_qkv) {
      const WeightView qkv = matrix(p + "attn_qkv.weight");  // [n_embd] -> [q; k; v]
      const std::int64_t q = std::int64_t{s.hp.n_head} * s.hp.head_dim;
      const std::int64_t kv = std::int64_t{s.hp.n_head_kv} * s.hp.head_dim;
      L.wq = row_range(qkv, 0, q);
      L.wk = row_range(qkv, q, kv);
      L.wv = row_range(qkv, q + kv, kv);
    } else {
      L.wq = matrix(p + "attn_q.weight");
      L.wk = matrix(p + "attn_k.weight");
      L.wv = matrix(p + "attn_v.weight");
    }
    L.wo = matrix(p + "attn_output.weight");
    if (s.recipe.qkv_bias) {
      L.bq = vec(p + "attn_q.bias");
      L.bk = vec(p + "attn_k.bias");
      L.bv = vec(p + "attn_v.bias");
    }
    if (s.recipe.qk_norm) {
      L.q_norm = vec(p + "attn_q_norm.weight");
      L.k_norm = vec(p + "attn_k_norm.weight");
    }
    if (s.recipe.post_norms) {
      L.post_attn_norm = vec(p + "post_attention_norm.weight");
      L.post_ffn_norm = vec(p + "post_ffw_norm.weight");
    }
    L.ffn_norm = vec(p + "ffn_norm.weight");
    if (s.recipe.fused_gate_up) {
      const WeightView gate_up = matrix(p + "ffn_up.weight");  // [n_embd] -> [gate; up]
      L.ffn_gate = row_range(gate_up, 0, s.hp.n_ff);
      L.ffn_up = row_range(gate_up, s.hp.n_ff, s.hp.n_ff);
    } else {
      L.ffn_gate = matrix(p + "ffn_gate.weight");
      L.ffn_up = matrix(p + "ffn_up.weight");
    }
    L.ffn_down = matrix(p + "ffn_down.weight");
  }
  return w;
}

}  // namespace seam
