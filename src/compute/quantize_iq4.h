// Weight quantizers for the non-linear 4-bit formats IQ4_NL (blocks of 32, one
// f16 scale) and IQ4_XS (super-blocks of 256: 8 sub-blocks with 6-bit scales
// under an f16 super-scale). Each value becomes the nearest entry of the fixed
// codebook kIQ4Values times its block's scale; the scale is chosen, without an
// importance matrix, by the x^2-weighted least squares of llama-quantize's
// search (ggml's quantize_iq4_nl / quantize_iq4_xs).
#pragma once

#include <cstdint>

namespace seam::quant {

// x[0..n) -> n / 32 blocks at dst; n must be a multiple of 32 (InvalidArgument otherwise).
void quantize_row_iq4_nl(const float* x, void* dst, std::int64_t n);
// x[0..n) -> n / 256 blocks at dst; n must be a multiple of 256 (InvalidArgument otherwise).
void quantize_row_iq4_xs(const float* x, void* dst, std::int64_t n);

}  // namespace seam::quant
