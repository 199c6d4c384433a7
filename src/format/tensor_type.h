// Tensor element types as numbered in the GGUF format (ggml type ids), with
// their block geometry. Kernels for these types live in compute/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace seam {

enum class TensorType : std::uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  // 4 and 5 (Q4_2, Q4_3) were removed from the format.
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

struct TensorTypeInfo {
  std::string_view name;     // "Q4_K", as the ecosystem spells it
  std::uint32_t block_size;  // elements per block (1 for plain types)
  std::uint32_t type_size;   // bytes per block
  bool decodable;            // this build has kernels for it
};

// Geometry of a known type id, or nullopt for an id the format never defined.
std::optional<TensorTypeInfo> tensor_type_info(std::uint32_t id);
inline TensorTypeInfo type_info(TensorType t) {
  return *tensor_type_info(static_cast<std::uint32_t>(t));
}

// Bytes needed for `n_elements` of type `t` laid out as `row_len`-element rows;
// nullopt when row_len is not a multiple of the block size or on overflow.
std::optional<std::uint64_t> row_bytes(TensorType t, std::uint64_t row_len);

// llama.cpp's names for the whole-file types of `general.file_type` (its
// llama_ftype): "Q4_K_M" for 15. nullopt for an id it never defined.
std::optional<std::string_view> file_type_name(std::uint32_t id);
// The id of such a name (exact spelling), or nullopt.
std::optional<std::uint32_t> file_type_id(std::string_view name);

}  // namespace seam
