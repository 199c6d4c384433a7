// Gated DeltaNet hybrid import: Qwen3NextForCausalLM (qwen3next) and the
// Qwen3.5 classes (qwen35, qwen35moe), as llama.cpp's Qwen3NextModel and
// Qwen3_5TextModel converters write them.
//
// What the converters change:
//  - every `*norm.weight` but the gated one (linear_attn.norm) gets HF's +1
//    (the checkpoint stores w for x * (1 + w)), in float32;
//  - A_log becomes ssm_a = -exp(A_log); conv1d [C, 1, K] loses its middle axis;
//  - Qwen3-Next's in_proj_qkvz holds, per key head g, [q_g; k_g; v; z] with
//    the r = H_v / H_k value heads of the group: its rows split into attn_qkv
//    (all q, all k, all v) and attn_gate (all z); in_proj_ba stays whole
//    (ssm_ba, per group [b x r, a x r]); value heads keep HF's grouped order;
//  - Qwen3.5's value heads are moved from grouped order (head g r + j reads
//    key head g) to tiled order (head j H_k + g reads key head g, i.e. head
//    mod H_k) wherever they index a tensor: the v rows of in_proj_qkv and the
//    v channels of conv1d, in_proj_z, in_proj_b, in_proj_a, A_log, dt_bias
//    and the columns of out_proj. Nothing changes when H_v = H_k.
// The multi-token-prediction block (mtp.*) and the vision tower are dropped.
#include <cmath>
#include <cstring>

#include "format/hf_import.h"
#include "seam/error.h"

namespace seam::hf_import {

namespace {

bool is_qwen3next(const Config& c) { return c.arch->arch == "qwen3next"; }

// The source of row (or element, or column block) i after Qwen3.5's value
// head reorder: tiled head h' holds grouped head (h' mod H_k) r + h' / H_k.
std::uint64_t grouped_head(std::uint64_t tiled, const Config& c) {
  const std::uint64_t hk = c.linear.n_head_k, r = c.linear.n_head_v / hk;
  return (tiled % hk) * r + tiled / hk;
}

bool reorders_v(const Config& c) {
  return !is_qwen3next(c) && c.linear.n_head_v != c.linear.n_head_k;
}

// Rows [first, first + n_head * per_head) of `data` (rows of `row_bytes`)
// with the value heads reordered, the other rows copied.
std::shared_ptr<std::vector<std::byte>> reorder_v_rows(std::span<const std::byte> data,
                                                       std::size_t row_bytes, std::uint64_t first,
                                                       std::uint64_t per_head, const Config& c) {
  auto out = std::make_shared<std::vector<std::byte>>(data.begin(), data.end());
  for (std::uint64_t h = 0; h < c.linear.n_head_v; ++h) {
    std::memcpy(out->data() + (first + h * per_head) * row_bytes,
                data.data() + (first + grouped_head(h, c) * per_head) * row_bytes,
                per_head * row_bytes);
  }
  return out;
}

// out_proj [E, H_v dv]: the column blocks of each row.
std::shared_ptr<std::vector<std::byte>> reorder_v_columns(std::span<const std::byte> data,
                                                          std::uint64_t rows, std::size_t elem,
                                                          const Config& c) {
  auto out = std::make_shared<std::vector<std::byte>>(data.size());
  const std::uint64_t dv = c.linear.head_v_dim;
  const std::size_t block = dv * elem, row = c.linear.n_head_v * block;
  for (std::uint64_t i = 0; i < rows; ++i) {
    for (std::uint64_t h = 0; h < c.linear.n_head_v; ++h) {
      std::memcpy(out->data() + i * row + h * block,
                  data.data() + i * row + grouped_head(h, c) * block, block);
    }
  }
  return out;
}

// Qwen3-Next's in_proj_qkvz rows -> {attn_qkv rows, attn_gate rows}.
std::pair<std::shared_ptr<std::vector<std::byte>>, std::shared_ptr<std::vector<std::byte>>>
split_qkvz(std::span<const std::byte> data, std::size_t row_bytes, const Config& c) {
  const auto& L = c.linear;
  const std::uint64_t hk = L.n_head_k, dk = L.head_k_dim, rdv = L.n_head_v / hk * L.head_v_dim;
  const std::uint64_t group = 2 * dk + 2 * rdv;
  auto qkv = std::make_shared<std::vector<std::byte>>((2 * hk * dk + hk * rdv) * row_bytes);
  auto z = std::make_shared<std::vector<std::byte>>(hk * rdv * row_bytes);
  const auto copy = [&](std::vector<std::byte>& dst, std::uint64_t to, std::uint64_t from,
                        std::uint64_t n) {
    std::memcpy(dst.data() + to * row_bytes, data.data() + from * row_bytes, n * row_bytes);
  };
  for (std::uint64_t g = 0; g < hk; ++g) {
    copy(*qkv, g * dk, g * group, dk);                           // q_g
    copy(*qkv, hk * dk + g * dk, g * group + dk, dk);            // k_g
    copy(*qkv, 2 * hk * dk + g * rdv, g * group + 2 * dk, rdv);  // v of the group
    copy(*z, g * rdv, g * group + 2 * dk + rdv, rdv);            // z of the group
  }
  return {qkv, z};
}

// Per-head values (A_log, dt_bias) in tiled order where Qwen3.5 reorders.
std::vector<float> head_values(const SafetensorsTensor& st, const Config& c) {
  std::vector<float> v = widen_to_f32(st);
  if (v.size() != c.linear.n_head_v) {
    bad(st.name, "has " + std::to_string(v.size()) + " values; linear_num_value_heads is " +
                     std::to_string(c.linear.n_head_v));
  }
  if (!reorders_v(c)) return v;
  std::vector<float> out(v.size());
  for (std::uint64_t h = 0; h < v.size(); ++h) out[h] = v[grouped_head(h, c)];
  return out;
}

void expect_rows(const SafetensorsTensor& st, std::uint64_t rows, std::uint64_t cols) {
  if (st.shape.size() != 2 || st.shape[0] != rows || st.shape[1] != cols) {
    bad(st.name,
        "must be [" + std::to_string(rows) + ", " + std::to_string(cols) + "] by the config");
  }
}

}  // namespace

bool is_hybrid(const HfArch& a) {
  return a.arch == "qwen35" || a.arch == "qwen35moe" || a.arch == "qwen3next";
}

void read_hybrid_config(const json& cfg, const std::string& file, Config& c, KeyValues& kv) {
  const std::string a(c.arch->arch);
  auto& L = c.linear;
  L.d_conv = require_positive(cfg, "linear_conv_kernel_dim", file);
  L.head_k_dim = require_positive(cfg, "linear_key_head_dim", file);
  L.head_v_dim = require_positive(cfg, "linear_value_head_dim", file);
  L.n_head_k = require_positive(cfg, "linear_num_key_heads", file);
  L.n_head_v = require_positive(cfg, "linear_num_value_heads", file);
  if (L.d_conv < 2 || L.d_conv > 64) bad(file, "'linear_conv_kernel_dim' must be in [2, 64]");
  if (L.head_k_dim > kMaxHeadDim || L.head_v_dim > kMaxHeadDim || L.n_head_v > (1u << 16)) {
    bad(file, "the linear-attention head sizes or counts are out of range");
  }
  if (L.n_head_v % L.n_head_k != 0) {
    bad(file, "'linear_num_value_heads' must be a multiple of 'linear_num_key_heads'");
  }
  if (L.head_k_dim != L.head_v_dim) {
    throw Error(Errc::Unsupported, "[hf] " + file +
                                       ": 'linear_key_head_dim' differs from "
                                       "'linear_value_head_dim'; seam, like llama.cpp, runs the "
                                       "delta rule with one state size");
  }
  kv.emplace_back(a + ".ssm.conv_kernel", u32_value(L.d_conv));
  kv.emplace_back(a + ".ssm.state_size", u32_value(L.head_k_dim));
  kv.emplace_back(a + ".ssm.group_count", u32_value(L.n_head_k));
  kv.emplace_back(a + ".ssm.time_step_rank", u32_value(L.n_head_v));
  kv.emplace_back(a + ".ssm.inner_size", u32_value(L.head_v_dim * L.n_head_v));

  // Layer kinds: transformers reads layer_types (else the interval); the
  // recipe knows only "every interval-th layer attends", so a list that does
  // not follow one is refused.
  std::uint64_t interval = hf::get_uint(cfg, "full_attention_interval", file).value_or(4);
  if (const auto lt = cfg.find("layer_types"); lt != cfg.end() && !lt->is_null()) {
    if (!lt->is_array() || lt->size() != c.n_layer) {
      bad(file, "'layer_types' must list one type per layer");
    }
    std::vector<bool> full(c.n_layer);
    for (std::size_t l = 0; l < c.n_layer; ++l) {
      const auto& v = (*lt)[l];
      if (!v.is_string() || (v != "full_attention" && v != "linear_attention")) {
        bad(file, "'layer_types'[" + std::to_string(l) +
                      "] must be 'full_attention' or 'linear_attention'");
      }
      full[l] = v == "full_attention";
    }
    interval = 0;
    for (std::size_t l = 0; l < c.n_layer && interval == 0; ++l) {
      if (full[l]) interval = l + 1;
    }
    for (std::size_t l = 0; l < c.n_layer; ++l) {
      if (interval == 0 || full[l] != ((l + 1) % interval == 0)) {
        throw Error(Errc::Unsupported,
                    "[hf] " + file +
                        ": 'layer_types' does not place attention on every n-th layer; seam's "
                        "hybrid recipe, like llama.cpp's, reads only full_attention_interval");
      }
    }
  }
  if (interval == 0 || interval > c.n_layer) {
    bad(file, "'full_attention_interval' must be in [1, num_hidden_layers]");
  }
  kv.emplace_back(a + ".full_attention_interval", u32_value(interval));

  // Partial rotary over head_dim (0.25 by default), in rope_parameters or at
  // the top level; Qwen3.5 adds its M-RoPE sections (text positions rotate
  // the same in every section).
  const auto rp = cfg.find("rope_parameters");
  const bool has_rp = rp != cfg.end() && rp->is_object();
  std::optional<double> pct =
      has_rp ? hf::get_number(*rp, "partial_rotary_factor", file) : std::nullopt;
  if (!pct) pct = hf::get_number(cfg, "partial_rotary_factor", file);
  const double factor = pct.value_or(0.25);
  if (!(factor > 0.0 && factor <= 1.0)) bad(file, "'partial_rotary_factor' must be in (0, 1]");
  const auto n_rot = static_cast<std::uint64_t>(static_cast<double>(c.head_dim) * factor);
  if (n_rot == 0 || n_rot % 2 != 0) {
    bad(file, "'partial_rotary_factor' leaves " + std::to_string(n_rot) +
                  " rotated dims; it must be a positive even number");
  }
  kv.emplace_back(a + ".rope.dimension_count", u32_value(n_rot));
  if (a != "qwen3next") {
    std::vector<std::int32_t> sections = {11, 11, 10, 0};
    const json* ms = nullptr;
    if (has_rp && rp->contains("mrope_section")) ms = &(*rp)["mrope_section"];
    if (const auto it = cfg.find("mrope_section"); !ms && it != cfg.end()) ms = &*it;
    if (ms && !ms->is_null()) {
      if (!ms->is_array() || ms->size() > 4) bad(file, "'mrope_section' must list 3 or 4 sizes");
      sections.assign(4, 0);
      for (std::size_t i = 0; i < ms->size(); ++i) {
        if (!(*ms)[i].is_number_integer() || (*ms)[i].get<std::int64_t>() < 0 ||
            (*ms)[i].get<std::int64_t>() > 1 << 16) {
          bad(file, "'mrope_section' entries must be small non-negative integers");
        }
        sections[i] = (*ms)[i].get<std::int32_t>();
      }
    }
    kv.emplace_back(a + ".rope.dimension_sections", GgufValue::i32s(sections));
  }
  if (c.n_expert > 0) {
    kv.emplace_back(a + ".expert_shared_feed_forward_length",
                    u32_value(require_positive(cfg, "shared_expert_intermediate_size", file)));
  }
}

std::optional<std::string> hybrid_text_name(std::string_view hf_name) {
  if (hf_name.starts_with("mtp.") || hf_name.starts_with("model.mtp.") ||
      hf_name.starts_with("model.visual.") || hf_name.starts_with("visual.")) {
    return std::nullopt;
  }
  std::string name(hf_name);
  for (std::size_t at; (at = name.find("language_model.")) != std::string::npos;) {
    name.erase(at, std::string_view("language_model.").size());
  }
  return name;
}

bool hybrid_tensors(const SafetensorsTensor& st, std::string_view name, const Config& c,
                    std::vector<GgufTensor>& out, Keepalive& keepalive) {
  const auto plus_one = [&](std::string gname) {
    std::vector<float> w = widen_to_f32(st);
    for (float& v : w) v += 1.0f;
    out.push_back(owned_f32_tensor(std::move(gname), std::move(w), keepalive));
  };
  if (name == "model.norm.weight") {
    plus_one("output_norm.weight");
    return true;
  }
  const auto lt = layer_tensor(name, c);
  if (!lt) return false;
  const auto& L = c.linear;
  const std::string blk = "blk." + std::to_string(lt->first) + ".";
  const std::string_view suffix = lt->second;
  const std::uint64_t e = c.n_embd, hv = L.n_head_v, dv = L.head_v_dim;
  const std::uint64_t qk_rows = 2 * L.n_head_k * L.head_k_dim, channels = qk_rows + hv * dv;
  // Bytes per element (0 for an empty tensor, which every shape check below refuses).
  const std::uint64_t n_el = st.n_elements();
  const std::size_t elem = st.shape.empty() || n_el == 0 ? 0 : st.data.size() / n_el;
  const auto rows_of = [&](std::string gname, std::uint64_t rows, std::uint64_t first,
                           std::uint64_t per_head) {
    expect_rows(st, rows, e);
    auto data = reorders_v(c)
                    ? reorder_v_rows(st.data, e * elem, first, per_head, c)
                    : std::make_shared<std::vector<std::byte>>(st.data.begin(), st.data.end());
    out.push_back(owned_tensor(blk + gname, st.type, {e, rows}, std::move(data), keepalive));
  };
  if (suffix == "linear_attn.in_proj_qkv.weight") {
    rows_of("attn_qkv.weight", channels, qk_rows, dv);
  } else if (suffix == "linear_attn.in_proj_z.weight") {
    rows_of("attn_gate.weight", hv * dv, 0, dv);
  } else if (suffix == "linear_attn.in_proj_b.weight") {
    rows_of("ssm_beta.weight", hv, 0, 1);
  } else if (suffix == "linear_attn.in_proj_a.weight") {
    rows_of("ssm_alpha.weight", hv, 0, 1);
  } else if (suffix == "linear_attn.in_proj_qkvz.weight" && is_qwen3next(c)) {
    expect_rows(st, channels + hv * dv, e);
    auto [qkv, z] = split_qkvz(st.data, e * elem, c);
    out.push_back(owned_tensor(blk + "attn_qkv.weight", st.type, {e, channels}, qkv, keepalive));
    out.push_back(owned_tensor(blk + "attn_gate.weight", st.type, {e, hv * dv}, z, keepalive));
  } else if (suffix == "linear_attn.in_proj_ba.weight" && is_qwen3next(c)) {
    expect_rows(st, 2 * hv, e);
    out.push_back(owned_tensor(
        blk + "ssm_ba.weight", st.type, {e, 2 * hv},
        std::make_shared<std::vector<std::byte>>(st.data.begin(), st.data.end()), keepalive));
  } else if (suffix == "linear_attn.conv1d.weight") {
    const std::uint64_t k = L.d_conv;
    if (st.shape != std::vector<std::uint64_t>{channels, 1, k}) {
      bad(st.name,
          "must be [" + std::to_string(channels) + ", 1, " + std::to_string(k) + "] by the config");
    }
    auto data = reorders_v(c)
                    ? reorder_v_rows(st.data, k * elem, qk_rows, dv, c)
                    : std::make_shared<std::vector<std::byte>>(st.data.begin(), st.data.end());
    out.push_back(owned_tensor(blk + "ssm_conv1d.weight", st.type, {k, channels}, data, keepalive));
  } else if (suffix == "linear_attn.dt_bias") {
    out.push_back(owned_f32_tensor(blk + "ssm_dt.bias", head_values(st, c), keepalive));
  } else if (suffix == "linear_attn.A_log") {
    std::vector<float> a = head_values(st, c);
    // In double, rounded once (the converter's float32 exp may differ by an ulp).
    for (float& v : a) v = static_cast<float>(-std::exp(static_cast<double>(v)));
    out.push_back(owned_f32_tensor(blk + "ssm_a", std::move(a), keepalive));
  } else if (suffix == "linear_attn.norm.weight") {
    out.push_back(owned_f32_tensor(blk + "ssm_norm.weight", widen_to_f32(st), keepalive));
  } else if (suffix == "linear_attn.out_proj.weight") {
    expect_rows(st, e, hv * dv);
    auto data = reorders_v(c)
                    ? reorder_v_columns(st.data, e, elem, c)
                    : std::make_shared<std::vector<std::byte>>(st.data.begin(), st.data.end());
    out.push_back(owned_tensor(blk + "ssm_out.weight", st.type, {hv * dv, e}, data, keepalive));
  } else if (suffix == "mlp.shared_expert_gate.weight") {
    expect_rows(st, 1, e);
    out.push_back(owned_f32_tensor(blk + "ffn_gate_inp_shexp.weight", widen_to_f32(st), keepalive));
  } else {
    static constexpr std::pair<std::string_view, std::string_view> kPlusOne[] = {
        {"input_layernorm.weight", "attn_norm.weight"},
        {"post_attention_layernorm.weight", "post_attention_norm.weight"},
        {"self_attn.q_norm.weight", "attn_q_norm.weight"},
        {"self_attn.k_norm.weight", "attn_k_norm.weight"},
    };
    static constexpr std::pair<std::string_view, std::string_view> kShared[] = {
        {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight"},
        {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight"},
        {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight"},
    };
    for (const auto& [hf, gg] : kPlusOne) {
      if (suffix != hf) continue;
      plus_one(blk + std::string(gg));
      return true;
    }
    for (const auto& [hf, gg] : kShared) {
      if (suffix != hf) continue;
      GgufTensor t;
      t.name = blk + std::string(gg);
      t.type = st.type;
      t.ne.assign(st.shape.rbegin(), st.shape.rend());
      t.nbytes = st.data.size();
      t.data = st.data.data();
      out.push_back(std::move(t));
      return true;
    }
    return false;
  }
  return true;
}

}  // namespace seam::hf_import
