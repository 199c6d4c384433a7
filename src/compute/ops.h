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
// sum_i x[i]^2 in double, the same value at every level and in every build
// (a fixed order of eight running sums; the norms below share it).
double sum_squares(const float* x, std::int64_t n);
void rms_norm_row(const float* x, const float* w, std::int64_t n, float eps, float* y);

// cs[2i], cs[2i+1] = attn_factor * (cos, sin) of theta_i, i < n_rot/2, where
// extrap_i = pos * freq_base^(-2i/n_rot) / freq_factors[i] and theta_i =
// freq_scale * extrap_i, or with YaRN (ext_factor != 0) its mix with extrap_i
// (RopeParams::ext_factor).
void rope_angles(std::int32_t pos, const RopeParams& p, float* cs);
// YaRN's ramp ends (pair indices, as in the paper and HF's find_correction_range):
// low = max(0, floor(d(beta_fast))), high = min(n_rot - 1, ceil(d(beta_slow))),
// d(r) = n_rot * ln(n_ctx_orig / (2 pi r)) / (2 ln freq_base).
void yarn_corr_dims(std::int32_t n_rot, std::uint32_t n_ctx_orig, float freq_base, float beta_fast,
                    float beta_slow, float* low, float* high);
// Rotates one head's pairs by the angles: adjacent (2i, 2i+1), or neox (i, i + n_rot/2).
void rope_head(float* x, const RopeParams& p, const float* cs);

// dst[i] = f16(src[i]) rounded to nearest even, and back (exact).
void f32_to_f16_row(const float* src, std::uint16_t* dst, std::int64_t n);
void f16_to_f32_row(const std::uint16_t* src, float* dst, std::int64_t n);
// One K or V row of n elements between f32 and a KV cache type
// (kv_row_bytes(t, n) bytes at dst / src).
void f32_to_kv_row(KvType t, const float* src, void* dst, std::int64_t n);
void kv_row_to_f32(KvType t, const void* src, float* dst, std::int64_t n);

// One (token, head) of masked softmax attention, two passes over the cells
// (scores, then the weighted sum of V): the scalar reference the tiled kernel
// (compute/attention.h) is tested against. `scores` and `row` are scratch.
void attention_head(const AttentionArgs& a, std::int64_t t, std::int32_t h,
                    std::vector<float>& scores, std::vector<float>& row);

// out = act(gate) * up; silu(x) = x / (1 + e^-x); gelu_tanh(x) = x/2 (1 + tanh(sqrt(2/pi)(x +
// 0.044715 x^3)))
void gated_activation(const float* gate, const float* up, std::int64_t n, Activation act,
                      float* out);

// x = exp(x - max) / sum
void softmax_row(float* x, std::int64_t n);

}  // namespace seam::ops
