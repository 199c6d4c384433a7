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
void configure_gemma4(const GgufFile&, Hparams&, Recipe&);
void layers_gemma4(const GgufFile&, ModelSpec&);
void tensors_gemma4(const ModelSpec&, ModelWeights&, TensorTable&);
// Gated-delta-net hybrids (arch/qwen35.cpp).
void configure_qwen35(const GgufFile&, Hparams&, Recipe&);
void configure_qwen35moe(const GgufFile&, Hparams&, Recipe&);
void configure_qwen3next(const GgufFile&, Hparams&, Recipe&);
void layers_qwen35(const GgufFile&, ModelSpec&);
void layers_qwen35moe(const GgufFile&, ModelSpec&);
void layers_qwen3next(const GgufFile&, ModelSpec&);
void tensors_hybrid(const ModelSpec&, ModelWeights&, TensorTable&);
void configure_gpt_oss(const GgufFile&, Hparams&, Recipe&);
void tensors_gpt_oss(const ModelSpec&, ModelWeights&, TensorTable&);

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
    ArchSpec{"gemma4", &configure_gemma4, &layers_gemma4, &tensors_gemma4},
    ArchSpec{"phi3", &configure_phi3},
    ArchSpec{"mistral3", &configure_mistral3},
    ArchSpec{"qwen35", &configure_qwen35, &layers_qwen35, &tensors_hybrid},
    ArchSpec{"qwen35moe", &configure_qwen35moe, &layers_qwen35moe, &tensors_hybrid},
    ArchSpec{"qwen3next", &configure_qwen3next, &layers_qwen3next, &tensors_hybrid},
    ArchSpec{"gpt-oss", &configure_gpt_oss, nullptr, &tensors_gpt_oss},
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
