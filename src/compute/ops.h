// Row kernels behind CpuBackend's non-matmul ops. Each states its math; the
// SIMD paths are checked against the scalar `*_ref` versions in tests.
#pragma once

#include <cstdint>
#include <vector>

#include "compute/backend.h"

namespace seam::ops {

// sum_i a[i] * b[i]
float dot_f32(const float* a, const float* b, std::int64_t n);
float dot_f32_ref(const float* a, const float* b, std::int64_t n);

// y = x / sqrt(mean(x^2) + eps) * w   (w null: no scale)
void rms_norm_row(const float* x, const float* w, std::int64_t n, float eps, float* y);

// cs[2i], cs[2i+1] = cos, sin of pos * freq_scale * freq_base^(-2i/n_rot) / freq_factors[i],
// i < n_rot/2
void rope_angles(std::int32_t pos, const RopeParams& p, float* cs);
// Rotates one head's pairs by the angles: adjacent (2i, 2i+1), or neox (i, i + n_rot/2).
void rope_head(float* x, const RopeParams& p, const float* cs);

// One (token, head) of masked softmax attention; `scores` is scratch.
void attention_head(const AttentionArgs& a, std::int64_t t, std::int32_t h,
                    std::vector<float>& scores);

// out = act(gate) * up; silu(x) = x / (1 + e^-x); gelu_tanh(x) = x/2 (1 + tanh(sqrt(2/pi)(x +
// 0.044715 x^3)))
void gated_activation(const float* gate, const float* up, std::int64_t n, Activation act,
                      float* out);

// x = exp(x - max) / sum
void softmax_row(float* x, std::int64_t n);

}  // namespace seam::ops
