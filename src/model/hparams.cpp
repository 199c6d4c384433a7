#include <limits>
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
  hp.n_ff = require_u32(f, arch + ".feed_forward_length");
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

float read_rope_scaling(const GgufFile& f, std::string_view arch_sv,
                        std::initializer_list<std::string_view> allowed) {
  const std::string arch(arch_sv);
  const auto type = f.get_string(arch + ".rope.scaling.type");
  if (!type || *type == "none") return 1.0f;
  for (std::string_view a : allowed) {
    if (*type == a) return 1.0f;
  }
  if (*type != "linear") {
    throw Error(Errc::Unsupported,
                arch + " rope scaling type '" + *type + "' is not supported by this build");
  }
  const std::string key = arch + ".rope.scaling.factor";
  const auto factor = f.get_float(key);
  if (!factor) return 1.0f;  // llama.cpp: an absent factor means no scaling
  if (!(*factor >= 1.0 && *factor < 1e6)) {
    throw Error(Errc::BadFormat, "'" + key + "' = " + std::to_string(*factor) +
                                     " is not a linear scaling factor >= 1");
  }
  return static_cast<float>(1.0 / *factor);
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

}  // namespace seam
