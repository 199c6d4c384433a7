// seam::quantize_model — rewrite a model (GGUF file, or a Hugging Face
// directory where this build reads one) as a GGUF v3 file with quantized weights.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace seam {

struct QuantizeOptions {
  // Target weight type, as the ecosystem spells it: Q8_0, Q4_0, Q4_1, Q5_0,
  // Q5_1, Q4_K, Q5_K, Q6_K, F16, BF16 or F32.
  std::string type = "Q8_0";
  // "" (every 2-D weight gets `type`) or one of llama.cpp's mixes, "q2_k",
  // "q3_k_s", "q3_k_m", "q3_k_l", "q4_k_s", "q4_k_m", "q5_k_s", "q5_k_m",
  // "iq4_nl" or "iq4_xs" (any case), which choose per tensor as llama.cpp's
  // llama_tensor_get_type does (docs/quantize.md): e.g. Q6_K for output.weight,
  // a larger type for some layers' attn_v/ffn_down in the *_M and *_L mixes,
  // the mix's base type for the rest; `type` is then ignored.
  std::string mix{};
  int n_threads = 0;  // 0 = one per core, at most 512
  // Called after each tensor with the tensors done and in all (for a progress
  // line); may be empty.
  std::function<void(std::size_t done, std::size_t total)> on_tensor{};
};

// What happened to one tensor.
struct QuantizedTensor {
  std::string name{};
  std::string from{};  // source type name
  std::string to{};    // written type name
  std::string note{};  // why `to` differs from the target, empty when it does not
  std::uint64_t bytes_in = 0, bytes_out = 0;
};

struct QuantizeReport {
  std::vector<QuantizedTensor> tensors{};
  std::uint64_t bytes_in = 0, bytes_out = 0;  // tensor data only
  std::uint32_t file_type = 0;                // general.file_type written
};

// Writes `out` (atomically: a temporary file renamed into place). Type choice:
//  - 1-D tensors (norms, biases) are stored as F32;
//  - tensors of 2 or more dimensions get the target type, unless their row
//    length is not a multiple of its block size: then Q4_K falls back to Q5_0,
//    Q5_K to Q5_1, Q6_K to Q8_0 (llama.cpp's choices), and when even 32 does
//    not divide the row, to F16; the report's note says so.
// All metadata is copied; general.file_type is set to the llama.cpp file type
// id of the target (or of the mix), general.quantization_version to 2.
// Throws Error(InvalidArgument) for an unknown type or mix, Error(Io) when a
// file cannot be read or written, Error(Unsupported) for source tensor types
// this build cannot decode.
QuantizeReport quantize_model(const std::string& in, const std::string& out,
                              const QuantizeOptions& options);

}  // namespace seam
