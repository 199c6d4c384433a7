// Gemma's attention scale, one fact shared by the GGUF recipes (model/arch/gemma2.cpp,
// gemma3.cpp) and the Hugging Face import (format/hf_model.cpp). GGUF carries no key for it:
// HF's query_pre_attn_scalar is head_dim for every size except 27B, where it is
// n_embd / n_head, and llama.cpp recognises 27B by its layer count, so we must too to compute
// the same logits.
#pragma once

#include <cstdint>
#include <string_view>

namespace seam::gemma {

// The layer count that marks the 27B model of `arch` (gemma2: 46, gemma3: 62); 0 for others.
constexpr std::uint64_t layers_of_27b(std::string_view arch) {
  return arch == "gemma2" ? 46 : arch == "gemma3" ? 62 : 0;
}

constexpr bool is_27b(std::string_view arch, std::uint64_t n_layer) {
  return n_layer != 0 && n_layer == layers_of_27b(arch);
}

// The divisor under the square root of the attention scale: 1/sqrt(query_pre_attn_scalar).
constexpr std::uint64_t query_pre_attn_scalar(std::string_view arch, std::uint64_t n_layer,
                                              std::uint64_t n_embd, std::uint64_t n_head,
                                              std::uint64_t head_dim) {
  return is_27b(arch, n_layer) ? n_embd / n_head : head_dim;
}

}  // namespace seam::gemma
