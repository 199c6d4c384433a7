// Row conversions between f32 and the GGUF block formats: exact decoders for
// every type the CPU kernels read, and the reference quantizers (ggml's
// quantize_row_*_ref rules) for activations and for writing weights.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "compute/dot.h"
#include "format/tensor_type.h"

namespace seam::quant {

// What compute knows about a weight type it has kernels for: one table row
// per type (quant.cpp) holds all of it.
struct TypeTraits {
  std::uint32_t block_size;  // elements per block
  std::uint32_t type_size;   // bytes per block
  TensorType dot_type;       // activation format its dot kernel takes (F32 for float weights)
  // Decodes n_blocks blocks (elements, for the float types) bit-identically to ggml.
  void (*dequantize)(const void* src, float* dst, std::int64_t n_blocks);
  dot::Kernels dot;  // one weight row against activation rows in dot_type
};

// Traits of a weight type this build can decode and multiply, or nullptr.
const TypeTraits* traits(TensorType t);

// "Q4_K" (the format's name), or "#42" for an id the format never defined.
std::string type_name(TensorType t);

// Bytes of one row of n elements; throws Unsupported for types without kernels
// and InvalidArgument when n is not a multiple of the block size.
std::size_t row_size(TensorType t, std::int64_t n);

// dst[0..n) = decoded src, bit-identical to ggml's to_float. n must be a
// multiple of the block size. Throws Unsupported for types it cannot decode.
void dequantize_row(TensorType t, const void* src, float* dst, std::int64_t n);

// Quantizes x[0..n) into blocks of `t`, following ggml's reference rules.
// Supported: Q8_0, Q8_1, Q8_K (activations), Q4_0, Q4_1, Q5_0, Q5_1 (weights; Q8_0
// doubles as a weight format), F32, F16, BF16; any other type throws Unsupported.
// Q4_K/Q5_K/Q6_K weights are written by quantize_weight_row (compute/quantize_k.h),
// which searches scales and so lives apart from these one-pass rules.
void quantize_row(TensorType t, const float* x, void* dst, std::int64_t n);

void quantize_row_q8_0(const float* x, void* dst, std::int64_t n);
void quantize_row_q8_1(const float* x, void* dst, std::int64_t n);
void quantize_row_q8_K(const float* x, void* dst, std::int64_t n);
void quantize_row_q4_0(const float* x, void* dst, std::int64_t n);
void quantize_row_q4_1(const float* x, void* dst, std::int64_t n);
void quantize_row_q5_0(const float* x, void* dst, std::int64_t n);
void quantize_row_q5_1(const float* x, void* dst, std::int64_t n);

// The quantizer for activations of dot type t (Q8_0, Q8_1, Q8_K) at `level`:
// a SIMD one where the level has it, writing the same bytes as quantize_row.
// The returned function does not check n: callers pass a multiple of t's
// block size. Throws Unsupported for other types.
using QuantizeFn = void (*)(const float* x, void* dst, std::int64_t n);
QuantizeFn act_quantizer(TensorType t, CpuLevel level);

namespace avx2 {
void quantize_row_q8_0(const float* x, void* dst, std::int64_t n);
void quantize_row_q8_1(const float* x, void* dst, std::int64_t n);
void quantize_row_q8_K(const float* x, void* dst, std::int64_t n);
}  // namespace avx2

namespace avx512 {
void quantize_row_q8_0(const float* x, void* dst, std::int64_t n);
void quantize_row_q8_1(const float* x, void* dst, std::int64_t n);
void quantize_row_q8_K(const float* x, void* dst, std::int64_t n);
}  // namespace avx512

}  // namespace seam::quant
