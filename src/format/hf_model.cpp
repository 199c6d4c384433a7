#include "format/hf_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <numbers>
#include <optional>
#include <span>
#include <string_view>

#include "core/half.h"
#include "format/hf_import.h"
#include "format/safetensors.h"
#include "seam/error.h"

namespace seam {

namespace hf_import {

void bad(const std::string& file, const std::string& what) {
  throw Error(Errc::BadFormat, "[hf] " + file + ": " + what);
}

GgufTensor owned_tensor(std::string name, TensorType type, std::vector<std::uint64_t> ne,
                        std::shared_ptr<std::vector<std::byte>> data, Keepalive& keepalive) {
  GgufTensor t;
  t.name = std::move(name);
  t.type = type;
  t.ne = std::move(ne);
  t.nbytes = data->size();
  t.data = data->data();
  keepalive.push_back(std::move(data));
  return t;
}

GgufTensor owned_f32_tensor(std::string name, std::vector<float> values, Keepalive& keepalive) {
  auto owned = std::make_shared<std::vector<float>>(std::move(values));
  GgufTensor t;
  t.name = std::move(name);
  t.type = TensorType::F32;
  t.ne = {owned->size()};
  t.nbytes = owned->size() * sizeof(float);
  t.data = reinterpret_cast<const std::byte*>(owned->data());
  keepalive.push_back(std::move(owned));
  return t;
}

std::vector<float> widen_to_f32(const SafetensorsTensor& st) {
  const std::size_t n = static_cast<std::size_t>(st.n_elements());
  std::vector<float> out(n);
  const std::byte* p = st.data.data();
  for (std::size_t i = 0; i < n; ++i) {
    std::uint16_t h;
    switch (st.type) {
      case TensorType::F32:
        std::memcpy(&out[i], p + 4 * i, 4);
        break;
      case TensorType::F16:
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = fp16_to_f32(h);
        break;
      case TensorType::BF16:
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = bf16_to_f32(h);
        break;
      default:
        bad(st.name, "must hold F32, F16 or BF16 values");
    }
  }
  return out;
}

std::uint64_t require_positive(const json& cfg, std::string_view key, const std::string& file) {
  auto v = hf::get_uint(cfg, key, file);
  if (!v) bad(file, "lacks required key '" + std::string(key) + "'");
  if (*v == 0 || *v > (1ull << 31)) {
    bad(file, "'" + std::string(key) + "' = " + std::to_string(*v) + " is out of range");
  }
  return *v;
}

GgufValue u32_value(std::uint64_t v) { return GgufValue::u32(static_cast<std::uint32_t>(v)); }

void set_key(KeyValues& kv, const std::string& key, GgufValue v) {
  for (auto& p : kv) {
    if (p.first == key) {
      p.second = std::move(v);
      return;
    }
  }
  kv.emplace_back(key, std::move(v));
}

std::optional<std::pair<std::uint64_t, std::string_view>> numbered(std::string_view s,
                                                                   std::uint64_t limit) {
  std::size_t n = 0;
  std::uint64_t value = 0;
  while (n < s.size() && n < 9 && s[n] >= '0' && s[n] <= '9') {
    value = value * 10 + static_cast<std::uint64_t>(s[n] - '0');
    ++n;
  }
  if (n == 0 || n >= s.size() || s[n] != '.' || value >= limit) return std::nullopt;
  return std::pair{value, s.substr(n + 1)};
}

std::optional<std::pair<std::uint64_t, std::string_view>> layer_tensor(std::string_view name,
                                                                       const Config& c) {
  constexpr std::string_view prefix = "model.layers.";
  if (!name.starts_with(prefix)) return std::nullopt;
  return numbered(name.substr(prefix.size()), c.n_layer);
}

namespace {

constexpr HfArch kArchs[] = {
    {"LlamaForCausalLM", "llama", true},
    {"MistralForCausalLM", "llama", true},
    {"MixtralForCausalLM", "llama", true, Moe::kMixtral},
    {"Qwen2ForCausalLM", "qwen2", false},
    {"Qwen3ForCausalLM", "qwen3", false},
    {"Qwen3MoeForCausalLM", "qwen3moe", false, Moe::kQwen},
    {"Phi3ForCausalLM", "phi3", false},
    {"Ministral3ForCausalLM", "mistral3", true},
    {"GptOssForCausalLM", "gpt-oss", false, Moe::kGptOss},
    {"Qwen3NextForCausalLM", "qwen3next", false, Moe::kQwen},
    {"Qwen3_5ForCausalLM", "qwen35", false},
    {"Qwen3_5ForConditionalGeneration", "qwen35", false},
    {"Qwen3_5MoeForCausalLM", "qwen35moe", false, Moe::kQwen},
    {"Qwen3_5MoeForConditionalGeneration", "qwen35moe", false, Moe::kQwen},
    {"Gemma2ForCausalLM", "gemma2", false},
    {"Gemma3ForCausalLM", "gemma3", false},
    {"Gemma3ForConditionalGeneration", "gemma3", false},
    {"Gemma4ForCausalLM", "gemma4", false},
    {"Gemma4ForConditionalGeneration", "gemma4", false},
};

}  // namespace

const HfArch* find_arch(std::string_view hf_name) {
  for (const HfArch& a : kArchs) {
    if (a.hf_name == hf_name) return &a;
  }
  return nullptr;
}

std::optional<std::string> gguf_name(std::string_view name, const Config& c) {
  if (name == "model.embed_tokens.weight") return "token_embd.weight";
  if (name == "model.norm.weight") return "output_norm.weight";
  if (name == "lm_head.weight") {
    if (c.tied) return std::nullopt;  // the embedding matrix serves as output
    return "output.weight";
  }
  if (const auto lt = layer_tensor(name, c)) {
    const auto [layer, suffix] = *lt;
    static constexpr std::pair<std::string_view, std::string_view> kLayerNames[] = {
        {"input_layernorm.weight", "attn_norm.weight"},
        {"self_attn.q_proj.weight", "attn_q.weight"},
        {"self_attn.k_proj.weight", "attn_k.weight"},
        {"self_attn.v_proj.weight", "attn_v.weight"},
        {"self_attn.q_proj.bias", "attn_q.bias"},
        {"self_attn.k_proj.bias", "attn_k.bias"},
        {"self_attn.v_proj.bias", "attn_v.bias"},
        {"self_attn.qkv_proj.weight", "attn_qkv.weight"},  // phi3: rows [q; k; v]
        {"self_attn.o_proj.weight", "attn_output.weight"},
        {"self_attn.q_norm.weight", "attn_q_norm.weight"},
        {"self_attn.k_norm.weight", "attn_k_norm.weight"},
        {"post_attention_layernorm.weight", "ffn_norm.weight"},
        {"mlp.gate_proj.weight", "ffn_gate.weight"},
        {"mlp.up_proj.weight", "ffn_up.weight"},
        {"mlp.gate_up_proj.weight", "ffn_up.weight"},  // phi3: rows [gate; up]
        {"mlp.down_proj.weight", "ffn_down.weight"},
    };
    const std::string blk = "blk." + std::to_string(layer) + ".";
    // Rotary caches some exporters save are recomputed from the config.
    if (suffix == "self_attn.rotary_emb.inv_freq") return std::nullopt;
    for (const auto& [hf, gg] : kLayerNames) {
      if (suffix == hf) return blk + std::string(gg);
    }
    const std::string_view router = c.arch->moe == Moe::kQwen      ? "mlp.gate.weight"
                                    : c.arch->moe == Moe::kMixtral ? "block_sparse_moe.gate.weight"
                                                                   : "";
    if (!router.empty() && suffix == router) return blk + "ffn_gate_inp.weight";
  }
  throw Error(Errc::Unsupported, "[hf] tensor '" + std::string(name) +
                                     "' has no counterpart in seam's " + std::string(c.arch->arch) +
                                     " layout");
}

}  // namespace hf_import

namespace {

using namespace hf_import;
namespace fs = std::filesystem;

// Llama 3 rope frequency factors as the GGUF converters compute them; the
// converters hold the base frequencies in float32, so they are rounded to
// float32 here too, the rest is double, the factors are rounded to float32
// (tools/hf.py computes the same numbers).
std::vector<float> llama3_rope_factors(const json& rs, double base, std::uint64_t dim,
                                       const std::string& file) {
  const double factor = hf::get_number(rs, "factor", file).value_or(8.0);
  const double low = hf::get_number(rs, "low_freq_factor", file).value_or(1.0);
  const double high = hf::get_number(rs, "high_freq_factor", file).value_or(4.0);
  const double old_ctx =
      hf::get_number(rs, "original_max_position_embeddings", file).value_or(8192.0);
  if (!(factor > 0) || !(low > 0) || !(high > low) || !(old_ctx > 0)) {
    bad(file, "rope_scaling (llama3) needs factor > 0 and 0 < low_freq_factor < high_freq_factor");
  }
  const double low_wavelen = old_ctx / low, high_wavelen = old_ctx / high;
  std::vector<float> out;
  for (std::uint64_t i = 0; i < dim; i += 2) {
    const float freq =
        static_cast<float>(1.0 / std::pow(base, static_cast<double>(i) / static_cast<double>(dim)));
    const double wavelen = 2.0 * std::numbers::pi / freq;
    double f;
    if (wavelen < high_wavelen) {
      f = 1.0;
    } else if (wavelen > low_wavelen) {
      f = factor;
    } else {
      const double smooth = (old_ctx / wavelen - low) / (high - low);
      f = 1.0 / ((1.0 - smooth) / factor + smooth);
    }
    out.push_back(static_cast<float>(f));
  }
  return out;
}

// LongRoPE frequency divisors from config.json, one per rotated pair.
std::vector<float> longrope_factors(const json& rs, std::string_view key, std::uint64_t n_rot,
                                    const std::string& file) {
  const auto it = rs.find(key);
  if (it == rs.end() || !it->is_array() || it->size() != n_rot / 2) {
    bad(file, "rope_scaling (longrope) needs '" + std::string(key) + "' with " +
                  std::to_string(n_rot / 2) + " numbers (one per rotated pair)");
  }
  std::vector<float> out;
  for (const json& v : *it) {
    if (!v.is_number() || !(v.get<double>() > 0.0 && v.get<double>() < 1e9)) {
      bad(file,
          "rope_scaling '" + std::string(key) + "' holds a non-positive or non-numeric entry");
    }
    out.push_back(static_cast<float>(v.get<double>()));
  }
  return out;
}

// The configuration a class reads: the ...ForConditionalGeneration classes
// keep their language model's keys under "text_config", which the converters
// merge over the top level (Gemma's absent keys then take transformers'
// defaults). Other architectures' configs are returned unchanged.
json text_config(const json& raw, const std::string& file) {
  const auto archs = raw.find("architectures");
  if (archs == raw.end() || !archs->is_array() || archs->empty() || !(*archs)[0].is_string()) {
    return raw;  // read_config reports it
  }
  const HfArch* arch = find_arch((*archs)[0].get<std::string>());
  if (!arch || !(is_gemma(*arch) || is_hybrid(*arch))) return raw;
  json cfg = raw;
  if (const auto tc = raw.find("text_config"); tc != raw.end() && !tc->is_null()) {
    if (!tc->is_object()) bad(file, "'text_config' must be an object");
    for (const auto& item : tc->items()) {
      if (item.key() != "architectures") cfg[item.key()] = item.value();
    }
  }
  if (is_gemma(*arch)) gemma_text_config(cfg, *arch, file);
  return cfg;
}

Config read_config(const json& cfg, const std::string& file, KeyValues& kv, ExtraTensors& extra) {
  Config c;
  const auto archs = cfg.find("architectures");
  if (archs == cfg.end() || !archs->is_array() || archs->empty() || !(*archs)[0].is_string()) {
    bad(file, "lacks an 'architectures' list naming the model class");
  }
  const std::string hf_name = (*archs)[0].get<std::string>();
  c.arch = find_arch(hf_name);
  if (!c.arch) {
    std::string known;
    for (const HfArch& a : kArchs) known += (known.empty() ? "" : ", ") + std::string(a.hf_name);
    throw Error(Errc::Unsupported, "[hf] " + file + ": unsupported Hugging Face architecture '" +
                                       hf_name + "' (supported: " + known + ")");
  }
  const std::string a(c.arch->arch);
  c.n_embd = require_positive(cfg, "hidden_size", file);
  c.n_layer = require_positive(cfg, "num_hidden_layers", file);
  if (c.n_layer > kMaxLayers) {
    bad(file, "'num_hidden_layers' = " + std::to_string(c.n_layer) + " is out of range (at most " +
                  std::to_string(kMaxLayers) + ")");
  }
  c.n_head = require_positive(cfg, "num_attention_heads", file);
  c.n_head_kv = hf::get_uint(cfg, "num_key_value_heads", file).value_or(c.n_head);
  if (c.n_head_kv == 0 || c.n_head_kv > c.n_head) {
    bad(file, "'num_key_value_heads' = " + std::to_string(c.n_head_kv) + " is out of range");
  }
  // Qwen3.5-MoE configs state only the experts' width (0: no dense width).
  const std::uint64_t n_ff = a == "qwen35moe" && !cfg.contains("intermediate_size")
                                 ? 0
                                 : require_positive(cfg, "intermediate_size", file);
  const auto head_dim = hf::get_uint(cfg, "head_dim", file);
  if (head_dim && (*head_dim == 0 || *head_dim > kMaxHeadDim)) {
    bad(file, "'head_dim' = " + std::to_string(*head_dim) + " is out of range");
  }
  if (!head_dim && c.n_embd % c.n_head != 0) {
    bad(file, "'num_attention_heads' does not divide 'hidden_size' and there is no 'head_dim'");
  }
  c.head_dim = head_dim.value_or(c.n_embd / c.n_head);
  const double eps = hf::get_number(cfg, "rms_norm_eps", file).value_or(1e-6);
  // Newer transformers write "rope_parameters" (with rope_theta inside) where
  // older ones wrote "rope_scaling"; both mean the same fields.
  auto rs = cfg.find("rope_scaling");
  if (rs == cfg.end() || rs->is_null()) rs = cfg.find("rope_parameters");
  // gemma4's rope_parameters, one entry per attention type, are read_gemma4_config's.
  const bool has_rs = a != "gemma4" && rs != cfg.end() && !rs->is_null();
  if (has_rs && !rs->is_object()) bad(file, "'rope_scaling' must be an object");
  std::optional<double> theta_opt = hf::get_number(cfg, "rope_theta", file);
  if (!theta_opt && has_rs) theta_opt = hf::get_number(*rs, "rope_theta", file);
  const double theta = theta_opt.value_or(10000.0);
  c.tied = hf::get_bool(cfg, "tie_word_embeddings", file).value_or(false);

  const auto& u32 = u32_value;
  kv.emplace_back(a + ".block_count", u32(c.n_layer));
  if (auto ctx = hf::get_uint(cfg, "max_position_embeddings", file)) {
    kv.emplace_back(a + ".context_length", u32(std::min<std::uint64_t>(*ctx, UINT32_MAX / 4)));
  }
  kv.emplace_back(a + ".embedding_length", u32(c.n_embd));
  if (n_ff > 0) kv.emplace_back(a + ".feed_forward_length", u32(n_ff));
  kv.emplace_back(a + ".attention.head_count", u32(c.n_head));
  kv.emplace_back(a + ".attention.head_count_kv", u32(c.n_head_kv));
  kv.emplace_back(a + ".rope.freq_base", GgufValue::f32(static_cast<float>(theta)));
  kv.emplace_back(a + ".attention.layer_norm_rms_epsilon", GgufValue::f32(static_cast<float>(eps)));
  if (head_dim) {
    kv.emplace_back(a + ".attention.key_length", u32(*head_dim));
    kv.emplace_back(a + ".attention.value_length", u32(*head_dim));
  }
  // Partial rotary (phi3 family): the converters' int(pct * n_embd) // n_head.
  // The hybrids rotate a fraction of head_dim (read_hybrid_config writes it).
  std::uint64_t n_rot = c.head_dim;
  if (auto pct = hf::get_number(cfg, "partial_rotary_factor", file); pct && !is_hybrid(*c.arch)) {
    if (!(*pct > 0.0 && *pct <= 1.0)) bad(file, "'partial_rotary_factor' must be in (0, 1]");
    n_rot = static_cast<std::uint64_t>(*pct * static_cast<double>(c.n_embd)) / c.n_head;
  }
  if (!is_hybrid(*c.arch)) kv.emplace_back(a + ".rope.dimension_count", u32(n_rot));
  const auto max_pos = hf::get_uint(cfg, "max_position_embeddings", file);
  if (a == "phi3") {
    // As phi3's converter writes them: the training context, and the window
    // (0 for none), which the recipe leaves unapplied as llama.cpp does.
    std::optional<std::uint64_t> orig;
    if (has_rs) orig = hf::get_uint(*rs, "original_max_position_embeddings", file);
    if (!orig) orig = hf::get_uint(cfg, "original_max_position_embeddings", file);
    if (orig) {
      if (*orig < 2 || *orig > UINT32_MAX / 4)
        bad(file, "'original_max_position_embeddings' is out of range");
      kv.emplace_back(a + ".rope.scaling.original_context_length", u32(*orig));
    }
    const auto window = hf::get_uint(cfg, "sliding_window", file);
    kv.emplace_back(a + ".attention.sliding_window",
                    u32(std::min<std::uint64_t>(window.value_or(0), UINT32_MAX)));
  }
  if (c.arch->moe != Moe::kNone) read_expert_config(cfg, file, c, kv);
  if (is_hybrid(*c.arch)) read_hybrid_config(cfg, file, c, kv);
  if (c.arch->hf_name == "MistralForCausalLM" || c.arch->hf_name == "MixtralForCausalLM") {
    // HF applies Mistral's and Mixtral's window to every layer; llama.cpp's
    // converter drops it, seam keeps it (the llama recipe applies a window the
    // file states).
    if (const auto window = hf::get_uint(cfg, "sliding_window", file); window && *window > 0) {
      if (*window > UINT32_MAX / 4) bad(file, "'sliding_window' is out of range");
      kv.emplace_back(a + ".attention.sliding_window", u32(*window));
    }
  }
  if (auto vocab = hf::get_uint(cfg, "vocab_size", file)) {
    kv.emplace_back(a + ".vocab_size", u32(std::min<std::uint64_t>(*vocab, UINT32_MAX / 4)));
  }
  if (has_rs) {
    auto type = hf::get_string(*rs, "rope_type", file);
    if (!type) type = hf::get_string(*rs, "type", file);
    if (!type) bad(file, "'rope_scaling' names no 'rope_type'");
    const std::string r = a + ".rope.scaling.";
    const auto f32 = [](double v) { return GgufValue::f32(static_cast<float>(v)); };
    if (*type == "llama3") {
      extra.emplace_back("rope_freqs.weight", llama3_rope_factors(*rs, theta, c.head_dim, file));
    } else if ((*type == "longrope" || *type == "su") && a == "phi3") {
      // phi3's converter: the factors as tensors, no scaling type, and the
      // attention factor. HF's definition of the latter is followed where the
      // converter differs: an explicit attention_factor / factor wins over
      // sqrt(1 + ln s / ln n_orig) with s = max_position_embeddings / n_orig.
      extra.emplace_back("rope_factors_long.weight",
                         longrope_factors(*rs, "long_factor", n_rot, file));
      extra.emplace_back("rope_factors_short.weight",
                         longrope_factors(*rs, "short_factor", n_rot, file));
      std::optional<std::uint64_t> orig =
          hf::get_uint(*rs, "original_max_position_embeddings", file);
      if (!orig) orig = hf::get_uint(cfg, "original_max_position_embeddings", file);
      if (!orig || *orig < 2 || !max_pos) {
        bad(file,
            "rope_scaling (longrope) needs 'original_max_position_embeddings' (>= 2) and "
            "'max_position_embeddings'");
      }
      double attn = 1.0;
      if (auto af = hf::get_number(*rs, "attention_factor", file)) {
        if (!(*af > 0.0 && *af < 1e3)) bad(file, "rope_scaling 'attention_factor' is out of range");
        attn = *af;
      } else {
        const double scale =
            hf::get_number(*rs, "factor", file)
                .value_or(static_cast<double>(*max_pos) / static_cast<double>(*orig));
        if (scale > 1.0)
          attn = std::sqrt(1.0 + std::log(scale) / std::log(static_cast<double>(*orig)));
      }
      kv.emplace_back(r + "attn_factor", f32(attn));
    } else if (*type != "default") {
      // Copied as the converters do; the architecture's recipe accepts or
      // refuses the type by name at admission.
      kv.emplace_back(r + "type", GgufValue::str(*type));
      if (auto f = hf::get_number(*rs, "factor", file)) kv.emplace_back(r + "factor", f32(*f));
      if (auto orig = hf::get_uint(*rs, "original_max_position_embeddings", file)) {
        kv.emplace_back(r + "original_context_length", u32(*orig));
      }
      if (*type == "yarn") {
        if (auto v = hf::get_number(*rs, "beta_fast", file))
          kv.emplace_back(r + "yarn_beta_fast", f32(*v));
        if (auto v = hf::get_number(*rs, "beta_slow", file))
          kv.emplace_back(r + "yarn_beta_slow", f32(*v));
        if (auto v = hf::get_number(*rs, "attention_factor", file)) {
          kv.emplace_back(r + "yarn_attn_factor", f32(*v));
        }
        // HF's mscale / mscale_all_dim ratio; seam (like llama.cpp) holds only
        // mscale_all_dim and takes mscale as 1.
        const auto mscale = hf::get_number(*rs, "mscale", file);
        const auto all_dim = hf::get_number(*rs, "mscale_all_dim", file);
        if (a == "mistral3") {
          // Ministral 3: Llama 4 attention temperature over the original context.
          if (auto beta = hf::get_number(*rs, "llama_4_scaling_beta", file)) {
            kv.emplace_back(a + ".attention.temperature_scale", f32(*beta));
          }
        }
        if (mscale && all_dim && *mscale != 0.0 && *all_dim != 0.0) {
          if (*mscale != 1.0) {
            throw Error(Errc::Unsupported, "[hf] " + file + ": yarn 'mscale' = " +
                                               std::to_string(*mscale) + " (only 1 is supported)");
          }
          kv.emplace_back(r + "yarn_log_multiplier", f32(*all_dim));
        }
      }
    }
  }
  return c;
}

// Q/K rows of each head from the "halves" order [x_0..x_{d/2-1}, y_0..y_{d/2-1}]
// to adjacent pairs [x_0, y_0, x_1, y_1, ...]: GGUF row h*d + 2i + j holds HF
// row h*d + j*d/2 + i (the converters' reshape(n_head, 2, d/2, n).swapaxes(1, 2)).
std::shared_ptr<std::vector<std::byte>> permute_rows(std::span<const std::byte> data,
                                                     std::uint64_t rows, std::uint64_t n_head,
                                                     const std::string& name) {
  if (rows == 0 || rows % (2 * n_head) != 0 || data.size() % rows != 0) {
    bad(name, std::to_string(rows) + " rows cannot be split into " + std::to_string(n_head) +
                  " heads of rotary pairs");
  }
  const std::size_t row = data.size() / rows;
  const std::uint64_t d = rows / n_head, half = d / 2;
  auto out = std::make_shared<std::vector<std::byte>>(data.size());
  for (std::uint64_t h = 0; h < n_head; ++h) {
    for (std::uint64_t i = 0; i < half; ++i) {
      for (std::uint64_t j = 0; j < 2; ++j) {
        std::memcpy(out->data() + (h * d + 2 * i + j) * row,
                    data.data() + (h * d + j * half + i) * row, row);
      }
    }
  }
  return out;
}
}  // namespace

bool is_hf_model_dir(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::is_regular_file(fs::path(path) / "config.json", ec);
}

GgufFile open_hf_model(const std::string& dir, Residency residency) {
  const std::string cfg_path = (fs::path(dir) / "config.json").string();
  const json cfg = text_config(hf::read_json_object(cfg_path), cfg_path);
  KeyValues kv, arch_kv;
  ExtraTensors extra;
  const Config c = read_config(cfg, cfg_path, arch_kv, extra);
  if (c.arch->moe == Moe::kGptOss) {
    read_gpt_oss_config(cfg, cfg_path, c, arch_kv);
  } else if (c.arch->arch == "gemma4") {
    read_gemma4_config(cfg, cfg_path, c, arch_kv, extra);
  } else if (is_gemma(*c.arch)) {
    read_gemma_config(cfg, cfg_path, c, arch_kv);
  }

  std::string name = hf::get_string(cfg, "_name_or_path", cfg_path).value_or("");
  if (name.empty()) name = fs::path(dir).lexically_normal().filename().string();
  if (name.empty()) name = fs::path(dir).lexically_normal().parent_path().filename().string();
  kv.emplace_back("general.architecture", GgufValue::str(std::string(c.arch->arch)));
  kv.emplace_back("general.name", GgufValue::str(name));
  for (auto& p : arch_kv) kv.push_back(std::move(p));
  std::uint64_t n_tokens = 0;  // the tokenizer's vocabulary size
  for (auto& p : hf_tokenizer_metadata(dir)) {
    if (p.first == "tokenizer.ggml.tokens" && p.second.type == GgufValueType::ARRAY) {
      n_tokens = std::get<GgufArray>(p.second.v).items.size();
    }
    kv.push_back(std::move(p));
  }

  const SafetensorsSet weights = SafetensorsSet::open_dir(dir, residency);
  Keepalive keepalive;  // the converted copies; the shards' mappings go in as such
  std::vector<GgufTensor> tensors;
  ExpertStacks experts;
  GptOssExpertSets gpt_oss_experts;
  const bool gpt_oss = c.arch->moe == Moe::kGptOss;
  const bool hybrid = is_hybrid(*c.arch);
  for (const SafetensorsTensor* st : weights.tensors()) {
    if (gpt_oss && collect_gpt_oss_expert(*st, c, gpt_oss_experts)) continue;
    if (st->type == TensorType::I8) {
      throw Error(Errc::Unsupported, "[hf] tensor '" + st->name +
                                         "' holds U8 bytes, which seam reads only as gpt-oss's "
                                         "MXFP4 expert blocks and scales");
    }
    std::string hf_name = st->name;
    if (hybrid) {
      const auto text = hybrid_text_name(hf_name);
      if (!text) continue;
      hf_name = *text;
      if (hybrid_tensors(*st, hf_name, c, tensors, keepalive)) continue;
    }
    if (const auto part = expert_part(hf_name, c)) {
      collect_expert(*st, *part, c, experts);
      continue;
    }
    const auto gname = is_gemma(*c.arch) ? gemma_gguf_name(hf_name, c)
                       : gpt_oss         ? gpt_oss_gguf_name(hf_name, c)
                                         : gguf_name(hf_name, c);
    if (!gname) continue;
    GgufTensor t;
    t.name = *gname;
    t.type = st->type;
    t.ne.assign(st->shape.rbegin(), st->shape.rend());
    if (t.ne.empty()) t.ne.push_back(1);  // a scalar is a 1-element vector
    t.nbytes = st->data.size();
    t.data = st->data.data();
    const bool is_q = gname->ends_with(".attn_q.weight") || gname->ends_with(".attn_q.bias");
    const bool is_k = gname->ends_with(".attn_k.weight") || gname->ends_with(".attn_k.bias");
    if (c.arch->permute_qk && (is_q || is_k)) {
      const std::uint64_t rows = st->shape.empty() ? 1 : st->shape[0];
      auto owned = permute_rows(st->data, rows, is_q ? c.n_head : c.n_head_kv, st->name);
      t.data = owned->data();
      keepalive.push_back(std::move(owned));
    }
    if (is_gemma(*c.arch)) gemma_adjust(*st, c, n_tokens, t, keepalive);
    tensors.push_back(std::move(t));
  }
  for (const auto& [key, stack] : experts) {
    tensors.push_back(stack_experts(key.first, key.second, stack, c, keepalive));
  }
  for (const auto& [layer, set] : gpt_oss_experts) {
    gpt_oss_expert_tensors(layer, set, c, tensors, keepalive);
  }
  for (auto& [tname, values] : extra) {
    tensors.push_back(owned_f32_tensor(tname, std::move(values), keepalive));
  }
  return GgufFile::assemble(dir, std::move(kv), std::move(tensors), std::move(keepalive),
                            weights.mappings());
}

GgufFile open_model_file(const std::string& path, Residency residency) {
  if (is_hf_model_dir(path)) return open_hf_model(path, residency);
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    throw Error(Errc::Io, "[hf] " + path +
                              " is a directory without config.json; expected a GGUF file or a "
                              "Hugging Face model directory");
  }
  return GgufFile::open(path, residency);
}

}  // namespace seam
