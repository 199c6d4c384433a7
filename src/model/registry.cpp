#include <array>

#include "model/arch.h"

namespace seam {

// Each architecture's configure function lives in src/model/arch/<name>.cpp.
void configure_llama(const GgufFile&, Hparams&, Recipe&);

namespace {
constexpr std::array kArchs = {
    ArchSpec{"llama", &configure_llama},
};
}  // namespace

const ArchSpec* find_arch(std::string_view name) {
  for (const ArchSpec& a : kArchs) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

std::vector<std::string_view> arch_names() {
  std::vector<std::string_view> names;
  for (const ArchSpec& a : kArchs) names.push_back(a.name);
  return names;
}

}  // namespace seam
