// The architecture registry: one recipe per `general.architecture`.
#pragma once

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

}  // namespace seam
