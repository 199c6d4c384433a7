// Weight quantizers for the K-quant formats Q2_K, Q3_K, Q4_K, Q5_K and Q6_K, writing
// blocks in the ecosystem layout (quant_blocks.h). They use no importance
// matrix: each sub-block's scale (and min) comes from a small search over
// candidate scales that minimises a weighted error, in the manner of ggml's
// reference quantizers (make_qkx2_quants for the asymmetric Q2_K/Q4_K/Q5_K,
// make_q3_quants for Q3_K, make_qx_quants for Q6_K). On the quant reference tensor the
// blocks are byte-identical to llama-quantize's (without an imatrix); that is
// tested but not promised for every input.
#pragma once

#include <cstdint>

#include "format/tensor_type.h"

namespace seam::quant {

// x[0..n) -> n / 256 blocks at dst. n must be a multiple of 256 (InvalidArgument otherwise).
void quantize_row_q2_K(const float* x, void* dst, std::int64_t n);
void quantize_row_q3_K(const float* x, void* dst, std::int64_t n);
void quantize_row_q4_K(const float* x, void* dst, std::int64_t n);
void quantize_row_q5_K(const float* x, void* dst, std::int64_t n);
void quantize_row_q6_K(const float* x, void* dst, std::int64_t n);

// Any weight type this build can write: the K-quants above, IQ4_NL and IQ4_XS
// (quantize_iq4.h), plus everything
// quant::quantize_row accepts (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, F16, BF16, F32).
// Throws Unsupported for other types, InvalidArgument for a bad n.
void quantize_weight_row(TensorType t, const float* x, void* dst, std::int64_t n);

// Whether quantize_weight_row can write `t`.
bool can_quantize_weight(TensorType t);

}  // namespace seam::quant
