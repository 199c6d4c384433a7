// The architecture registry: one recipe per `general.architecture`.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "format/gguf.h"
#include "model/hparams.h"
#include "model/tensor_table.h"
#include "model/weights.h"

namespace seam {

struct ArchSpec {
  std::string_view name;
  // Reads the architecture's metadata keys into hparams and sets its recipe
  // options. Throws Error(BadFormat) naming a missing or invalid key, and
  // Error(Unsupported) naming an option this build does not implement.
  void (*configure)(const GgufFile& file, Hparams& hp, Recipe& recipe);
  // Optional: adjusts spec.layers (already default_layers(hp), model/layers.h)
  // for what differs per layer in this architecture: per-layer arrays of the
  // metadata, layer kinds, KV sharing. Throws like configure.
  void (*layers)(const GgufFile& file, ModelSpec& spec) = nullptr;
  // Optional: the tensor rows this architecture adds to standard_rows
  // (model/tensor_table.h), destinations in `w`.
  void (*tensors)(const ModelSpec& spec, ModelWeights& w, TensorTable& table) = nullptr;
};

const ArchSpec* find_arch(std::string_view name);
std::vector<std::string_view> arch_names();

// Shared by the recipes: the `<arch>.*` keys every decoder-only GGUF carries
// (embedding_length, block_count, head counts, feed_forward_length, norm eps
// key `norm_eps_key`, rope base and dimension count, context length).
void read_common_hparams(const GgufFile& file, std::string_view arch, std::string_view norm_eps_key,
                         Hparams& hp);

// `<arch>.rope.scaling.*` into hp: n_ctx_orig (`original_context_length`,
// default n_ctx_train), rope_attn_factor (`attn_factor`, any type), and by
// `type`: none; linear (rope_scale = 1/factor); yarn (rope_scale = 1/factor,
// yarn_* from `yarn_ext_factor`, `yarn_beta_fast`, `yarn_beta_slow`, and the
// attention factor from `yarn_attn_factor`, else `yarn_log_multiplier`, else
// 0.1 ln(factor) + 1). `allowed` lists the types the recipe handles itself
// (llama's "llama3" frequency factors, phi3's "longrope"); any other type is
// refused by name. Call after read_common_hparams.
void read_rope_scaling(const GgufFile& file, std::string_view arch, Hparams& hp,
                       std::initializer_list<std::string_view> allowed = {});

// Sliding-window attention as llama.cpp reads it: the window from
// `<arch>.attention.sliding_window` (or `default_window` when absent; 0 = off),
// which layers use it from `<arch>.attention.sliding_window_pattern` — a
// period P (layer l is SWA unless l % P == P - 1) or one flag per layer — else
// `default_period`, and the SWA layers' RoPE base from `<arch>.rope.freq_base_swa`
// (default 10000).
void read_sliding_window(const GgufFile& file, std::string_view arch, std::uint32_t default_window,
                         std::uint32_t default_period, Hparams& hp);

// Shared by gemma2 and gemma3 (defined in arch/gemma2.cpp): a soft-cap key, positive, else
// `fallback` when absent; and the attention scale 1/sqrt(query_pre_attn_scalar)
// (format/gemma_attention.h says why it depends on the layer count).
float gemma_softcap(const GgufFile& file, const std::string& key, float fallback);
float gemma_attn_scale(std::string_view arch, const Hparams& hp);

// Mixture of experts: `<arch>.expert_count` (absent or 0: dense),
// `expert_used_count` (required then, in [1, expert_count]) and each expert's
// width `expert_feed_forward_length` (else feed_forward_length, as Mixtral-style
// llama files store it) into hp. Call after read_common_hparams.
void read_experts(const GgufFile& file, std::string_view arch, Hparams& hp);

// Refuses mixture-of-experts variants (`<arch>.expert_count` > 0) by name.
void refuse_experts(const GgufFile& file, std::string_view arch);

}  // namespace seam
