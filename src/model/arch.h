// The architecture registry: one recipe per `general.architecture`.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "format/gguf.h"
#include "model/hparams.h"

namespace seam {

struct ArchSpec {
  std::string_view name;
  // Reads the architecture's metadata keys into hparams and sets its recipe
  // options. Throws Error(BadFormat) naming a missing or invalid key, and
  // Error(Unsupported) naming an option this build does not implement.
  void (*configure)(const GgufFile& file, Hparams& hp, Recipe& recipe);
};

const ArchSpec* find_arch(std::string_view name);
std::vector<std::string_view> arch_names();

// Shared by the recipes: the `<arch>.*` keys every decoder-only GGUF carries
// (embedding_length, block_count, head counts, feed_forward_length, norm eps
// key `norm_eps_key`, rope base and dimension count, context length).
void read_common_hparams(const GgufFile& file, std::string_view arch, std::string_view norm_eps_key,
                         Hparams& hp);

// `<arch>.rope.scaling.type`: returns the position multiplier (1 for none,
// 1/factor for linear). `allowed` lists the types the recipe implements
// besides none/linear (llama's "llama3" frequency factors); any other type is
// refused by name.
float read_rope_scaling(const GgufFile& file, std::string_view arch,
                        std::initializer_list<std::string_view> allowed = {});

// Sliding-window attention as llama.cpp reads it: the window from
// `<arch>.attention.sliding_window` (or `default_window` when absent; 0 = off),
// which layers use it from `<arch>.attention.sliding_window_pattern` — a
// period P (layer l is SWA unless l % P == P - 1) or one flag per layer — else
// `default_period`, and the SWA layers' RoPE base from `<arch>.rope.freq_base_swa`
// (default 10000).
void read_sliding_window(const GgufFile& file, std::string_view arch, std::uint32_t default_window,
                         std::uint32_t default_period, Hparams& hp);

// Refuses mixture-of-experts variants (`<arch>.expert_count` > 0) by name.
void refuse_experts(const GgufFile& file, std::string_view arch);

}  // namespace seam
