#include <array>

#include "model/arch.h"

namespace seam {

// Each architecture's configure function lives in src/model/arch/<name>.cpp.
void configure_llama(const GgufFile&, Hparams&, Recipe&);
void configure_qwen2(const GgufFile&, Hparams&, Recipe&);
void configure_qwen3(const GgufFile&, Hparams&, Recipe&);
void configure_qwen3moe(const GgufFile&, Hparams&, Recipe&);
void configure_gemma2(const GgufFile&, Hparams&, Recipe&);
void configure_gemma3(const GgufFile&, Hparams&, Recipe&);
void configure_phi3(const GgufFile&, Hparams&, Recipe&);
void configure_mistral3(const GgufFile&, Hparams&, Recipe&);
void configure_gpt_oss(const GgufFile&, Hparams&, Recipe&);
void gpt_oss_tensors(const ModelSpec&, ModelWeights&, TensorTable&);

namespace {
constexpr std::array kArchs = {
    // One line per architecture.
    // clang-format off
    ArchSpec{"llama", &configure_llama},
    ArchSpec{"qwen2", &configure_qwen2},
    ArchSpec{"qwen3", &configure_qwen3},
    ArchSpec{"qwen3moe", &configure_qwen3moe},
    ArchSpec{"gemma2", &configure_gemma2},
    ArchSpec{"gemma3", &configure_gemma3},
    ArchSpec{"phi3", &configure_phi3},
    ArchSpec{"mistral3", &configure_mistral3},
    ArchSpec{"gpt-oss", &configure_gpt_oss, nullptr, &gpt_oss_tensors},
    // clang-format on
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
