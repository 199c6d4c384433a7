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

// llama.cpp's mixed file types this build writes (llama_ftype's Q2_K, Q3_K_S/M/L,
// Q4_K_S/M, Q5_K_S/M, IQ4_NL, IQ4_XS).
enum class QuantMix {
  None,
  Q2_K,
  Q3_K_S,
  Q3_K_M,
  Q3_K_L,
  Q4_K_S,
  Q4_K_M,
  Q5_K_S,
  Q5_K_M,
  IQ4_NL,
  IQ4_XS
};

// "q4_k" -> Q4_K, for the weight types quantize_model writes; Error(InvalidArgument) otherwise.
TensorType parse_quant_type(const std::string& name);

// "q5_k_m" / "Q5_K_M" -> the mix ("q2_k" is the Q2_K mix); "" -> None;
// Error(InvalidArgument) naming the mixes otherwise.
QuantMix parse_quant_mix(const std::string& name);

// The type a mix gives the tensors its rules do not single out (Q2_K .. Q5_K, IQ4_NL, IQ4_XS).
TensorType mix_base_type(QuantMix mix);

// llama.cpp's general.file_type id (llama_ftype) for a target type, or for the mix when there is
// one.
std::uint32_t llama_file_type(TensorType target, QuantMix mix);

// The type each tensor of `file` gets (see include/seam/quantize.h for the rules);
// under a mix, `target` is ignored.
std::vector<PlannedTensor> plan_quantization(const GgufFile& file, TensorType target, QuantMix mix);

}  // namespace seam
