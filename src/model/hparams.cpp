#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <variant>

#include "model/arch.h"
#include "seam/error.h"

namespace seam {

namespace {

std::uint32_t require_u32(const GgufFile& f, const std::string& key) {
  auto v = f.get_uint(key);
  if (!v) throw Error(Errc::BadFormat, "model metadata lacks required key '" + key + "'");
  if (*v == 0 || *v > std::numeric_limits<std::uint32_t>::max() / 4) {
    throw Error(Errc::BadFormat,
                "model metadata key '" + key + "' has an invalid value " + std::to_string(*v));
  }
  return static_cast<std::uint32_t>(*v);
}

std::uint32_t optional_u32(const GgufFile& f, const std::string& key, std::uint32_t fallback) {
  auto v = f.get_uint(key);
  if (!v) return fallback;
  if (*v == 0 || *v > std::numeric_limits<std::uint32_t>::max() / 4) {
    throw Error(Errc::BadFormat,
                "model metadata key '" + key + "' has an invalid value " + std::to_string(*v));
  }
  return static_cast<std::uint32_t>(*v);
}

}  // namespace

void read_common_hparams(const GgufFile& f, std::string_view arch_sv, std::string_view norm_eps_key,
                         Hparams& hp) {
  const std::string arch(arch_sv);
  hp.n_embd = require_u32(f, arch + ".embedding_length");
  hp.n_layer = require_u32(f, arch + ".block_count");
  hp.n_head = require_u32(f, arch + ".attention.head_count");
  hp.n_head_kv = optional_u32(f, arch + ".attention.head_count_kv", hp.n_head);
  // Optional as in llama.cpp: a mixture-of-experts file may state only the
  // experts' width (Qwen3.5-MoE's converter writes none); a layer left
  // without a width is refused by name (model/layers.cpp).
  hp.n_ff = optional_u32(f, arch + ".feed_forward_length", 0);
  hp.n_ctx_train = optional_u32(f, arch + ".context_length", 2048);
  if (hp.n_embd % hp.n_head != 0 && !f.find(arch + ".attention.key_length")) {
    throw Error(Errc::BadFormat, "head count " + std::to_string(hp.n_head) +
                                     " does not divide the embedding length " +
                                     std::to_string(hp.n_embd));
  }
  hp.head_dim = optional_u32(f, arch + ".attention.key_length", hp.n_embd / hp.n_head);
  const std::uint32_t v_len = optional_u32(f, arch + ".attention.value_length", hp.head_dim);
  if (v_len != hp.head_dim) {
    throw Error(Errc::Unsupported, "key length " + std::to_string(hp.head_dim) +
                                       " differs from value length " + std::to_string(v_len) +
                                       "; this build needs them equal");
  }
  if (hp.n_head % hp.n_head_kv != 0) {
    throw Error(Errc::BadFormat, "KV head count " + std::to_string(hp.n_head_kv) +
                                     " does not divide the head count " +
                                     std::to_string(hp.n_head));
  }
  hp.n_rot = optional_u32(f, arch + ".rope.dimension_count", hp.head_dim);
  if (hp.n_rot > hp.head_dim || hp.n_rot % 2 != 0) {
    throw Error(Errc::BadFormat, "rope dimension count " + std::to_string(hp.n_rot) +
                                     " must be even and at most the head size " +
                                     std::to_string(hp.head_dim));
  }
  const std::string eps_key = arch + "." + std::string(norm_eps_key);
  auto eps = f.get_float(eps_key);
  if (!eps) throw Error(Errc::BadFormat, "model metadata lacks required key '" + eps_key + "'");
  if (!(*eps > 0.0 && *eps < 1.0)) {
    throw Error(Errc::BadFormat,
                "'" + eps_key + "' = " + std::to_string(*eps) + " is not in (0, 1)");
  }
  hp.norm_eps = static_cast<float>(*eps);
  hp.rope_base = static_cast<float>(f.get_float(arch + ".rope.freq_base").value_or(10000.0));
  if (!(hp.rope_base > 0.0f)) throw Error(Errc::BadFormat, "rope.freq_base must be positive");
}

namespace {

// A float key that must lie in [lo, hi] when present.
std::optional<double> optional_float(const GgufFile& f, const std::string& key, double lo,
                                     double hi) {
  const auto v = f.get_float(key);
  if (v && !(*v >= lo && *v <= hi)) {
    throw Error(Errc::BadFormat, "'" + key + "' = " + std::to_string(*v) + " is not in [" +
                                     std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return v;
}

// YaRN's attention factor for scale s > 1 (the paper's sqrt(1/t) = 0.1 ln s + 1,
// times mscale as DeepSeek/Mistral configs state it).
double yarn_get_mscale(double s, double mscale) {
  return s <= 1.0 ? 1.0 : 0.1 * mscale * std::log(s) + 1.0;
}

}  // namespace

void read_rope_scaling(const GgufFile& f, std::string_view arch_sv, Hparams& hp,
                       std::initializer_list<std::string_view> allowed) {
  const std::string arch(arch_sv);
  const std::string p = arch + ".rope.scaling.";
  hp.rope_scale = 1.0f;
  // 0 means unset to llama.cpp, which then uses the training context.
  const bool orig_zero =
      f.get_uint(p + "original_context_length") == std::optional<std::uint64_t>(0);
  hp.n_ctx_orig =
      orig_zero ? hp.n_ctx_train : optional_u32(f, p + "original_context_length", hp.n_ctx_train);
  // llama.cpp multiplies every rotation by this key whatever the scaling type.
  hp.rope_attn_factor =
      static_cast<float>(optional_float(f, p + "attn_factor", 1e-3, 1e3).value_or(1.0));

  const auto type = f.get_string(p + "type");
  if (!type || *type == "none") return;
  for (std::string_view a : allowed) {
    if (*type == a) return;
  }
  if (*type != "linear" && *type != "yarn") {
    throw Error(Errc::Unsupported,
                arch + " rope scaling type '" + *type + "' is not supported by this build");
  }
  // llama.cpp: an absent factor means no scaling.
  const double factor = optional_float(f, p + "factor", 1.0, 1e6).value_or(1.0);
  hp.rope_scale = static_cast<float>(1.0 / factor);
  if (*type == "linear") return;

  // YaRN as in the paper and HF's _compute_yarn_parameters: the angle of pair
  // i mixes interpolated (pos / s) and original rotation along a ramp over
  // the pairs that turn between beta_slow and beta_fast times in n_ctx_orig;
  // cos and sin are scaled by the attention factor.
  hp.yarn_ext_factor =
      static_cast<float>(optional_float(f, p + "yarn_ext_factor", 0.0, 1.0).value_or(1.0));
  hp.yarn_beta_fast =
      static_cast<float>(optional_float(f, p + "yarn_beta_fast", 1e-3, 1e6).value_or(32.0));
  hp.yarn_beta_slow =
      static_cast<float>(optional_float(f, p + "yarn_beta_slow", 1e-3, 1e6).value_or(1.0));
  if (const auto af = optional_float(f, p + "yarn_attn_factor", 1e-3, 1e3)) {
    hp.yarn_mscale =
        static_cast<float>(*af);  // HF: an explicit attention_factor replaces the formula
  } else if (const auto log_mul = optional_float(f, p + "yarn_log_multiplier", 0.0, 1e3);
             log_mul && *log_mul != 0.0) {
    // HF's mscale / mscale_all_dim ratio, with mscale = 1 as llama.cpp assumes.
    hp.yarn_mscale =
        static_cast<float>(yarn_get_mscale(factor, 1.0) / yarn_get_mscale(factor, *log_mul));
  } else {
    hp.yarn_mscale = static_cast<float>(yarn_get_mscale(factor, 1.0));
  }
}

void read_sliding_window(const GgufFile& f, std::string_view arch_sv, std::uint32_t default_window,
                         std::uint32_t default_period, Hparams& hp) {
  const std::string arch(arch_sv);
  const std::string window_key = arch + ".attention.sliding_window";
  const auto window = f.get_uint(window_key);
  if (window && *window > std::numeric_limits<std::uint32_t>::max()) {
    throw Error(Errc::BadFormat,
                "'" + window_key + "' = " + std::to_string(*window) + " is out of range");
  }
  hp.n_swa = window ? static_cast<std::uint32_t>(*window) : default_window;
  hp.swa_layers.clear();
  if (hp.n_swa == 0) return;

  hp.swa_layers.assign(hp.n_layer, false);
  const std::string pattern_key = arch + ".attention.sliding_window_pattern";
  const GgufValue* pattern = f.find(pattern_key);
  if (pattern && pattern->type == GgufValueType::ARRAY) {
    const GgufArray& a = std::get<GgufArray>(pattern->v);
    if (a.items.size() != hp.n_layer) {
      throw Error(Errc::BadFormat, "'" + pattern_key + "' has " + std::to_string(a.items.size()) +
                                       " entries for " + std::to_string(hp.n_layer) + " layers");
    }
    for (std::uint32_t l = 0; l < hp.n_layer; ++l) {
      const GgufValue& v = a.items[l];
      if (const bool* b = std::get_if<bool>(&v.v)) {
        hp.swa_layers[l] = *b;
      } else if (const auto* u = std::get_if<std::uint64_t>(&v.v)) {
        hp.swa_layers[l] = *u != 0;
      } else if (const auto* s = std::get_if<std::int64_t>(&v.v)) {
        hp.swa_layers[l] = *s != 0;
      } else {
        throw Error(Errc::BadFormat, "'" + pattern_key + "' must hold booleans or integers");
      }
    }
  } else {
    const auto period = f.get_uint(pattern_key);
    const std::uint64_t p = period ? *period : default_period;
    // Period 0 makes every layer SWA, as in llama.cpp.
    for (std::uint32_t l = 0; l < hp.n_layer; ++l) hp.swa_layers[l] = p == 0 || l % p < p - 1;
  }
  hp.rope_scale_swa = hp.rope_scale;
  hp.rope_base_swa =
      static_cast<float>(f.get_float(arch + ".rope.freq_base_swa").value_or(10000.0));
  if (!(hp.rope_base_swa > 0.0f))
    throw Error(Errc::BadFormat, "rope.freq_base_swa must be positive");
}

void refuse_experts(const GgufFile& f, std::string_view arch_sv) {
  const std::string arch(arch_sv);
  if (auto n = f.get_uint(arch + ".expert_count"); n && *n > 0) {
    throw Error(Errc::Unsupported, "mixture-of-experts " + arch + " models (expert_count " +
                                       std::to_string(*n) + ") are not supported");
  }
}

void read_experts(const GgufFile& f, std::string_view arch_sv, Hparams& hp) {
  const std::string arch(arch_sv);
  const auto n = f.get_uint(arch + ".expert_count");
  if (!n || *n == 0) return;
  // A bound far above real models (512) that keeps router buffers small.
  if (*n > 4096) {
    throw Error(Errc::BadFormat, "'" + arch + ".expert_count' = " + std::to_string(*n) +
                                     " is out of range (at most 4096)");
  }
  hp.n_expert = static_cast<std::uint32_t>(*n);
  hp.n_expert_used = require_u32(f, arch + ".expert_used_count");
  if (hp.n_expert_used > hp.n_expert) {
    throw Error(Errc::BadFormat, "'" + arch +
                                     ".expert_used_count' = " + std::to_string(hp.n_expert_used) +
                                     " exceeds expert_count " + std::to_string(hp.n_expert));
  }
  hp.n_ff_exp = optional_u32(f, arch + ".expert_feed_forward_length", hp.n_ff);
}

}  // namespace seam
