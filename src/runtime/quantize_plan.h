// Internals of quantize_model, exposed for tests: the per-tensor type plan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "format/tensor_type.h"

namespace seam {

struct PlannedTensor {
  const GgufTensor* src = nullptr;
  TensorType to = TensorType::F32;
  std::string note;  // why `to` is not the target; empty otherwise
};

// "q4_k" -> Q4_K, for the weight types quantize_model writes; Error(InvalidArgument) otherwise.
TensorType parse_quant_type(const std::string& name);

// llama.cpp's general.file_type id (llama_ftype) for a target type or the Q4_K_M mix.
std::uint32_t llama_file_type(TensorType target, bool q4_k_m);

// The type each tensor of `file` gets (see include/seam/quantize.h for the rules).
std::vector<PlannedTensor> plan_quantization(const GgufFile& file, TensorType target, bool q4_k_m);

}  // namespace seam
