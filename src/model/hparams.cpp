#include <limits>
#include <string>

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

}  // namespace seam
