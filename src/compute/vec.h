// Row primitives for the ops outside matmul (attention, the KV cache), per CPU
// level like the dot kernels (dot.h): the SIMD bodies live in vec_avx2.cpp and
// vec_avx512.cpp, compiled with their level's flags, and are reached only
// through vec_fns().
#pragma once

#include <cstdint>

#include "compute/cpu_level.h"

namespace seam::vec {

struct VecFns {
  // sum_i a[i] * b[i], f32 accumulation (order differs per level).
  float (*dot_f32)(const float* a, const float* b, std::int64_t n);
  // dst[i] = binary16(src[i]), rounded to nearest even (NaN stays NaN).
  void (*f32_to_f16)(const float* src, std::uint16_t* dst, std::int64_t n);
  // dst[i] = src[i] widened (exact).
  void (*f16_to_f32)(const std::uint16_t* src, float* dst, std::int64_t n);
  // y[i] = a * y[i] + b * x[i] (the delta rule's row update; rounding differs per level).
  void (*scale_add)(float* y, float a, float b, const float* x, std::int64_t n);
  // out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + e^-g) (the SwiGLU FFN);
  // out may be gate or up. The SIMD levels' exp is within a few ulp.
  void (*silu_mul)(const float* gate, const float* up, std::int64_t n, float* out);
  // out[i] = gelu(gate[i]) * up[i], tanh's approximation of GELU (GeGLU: Gemma),
  // gelu(g) = g sigmoid(2 sqrt(2/pi) (g + 0.044715 g^3)), which is
  // 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))); out may be gate or up.
  void (*gelu_mul)(const float* gate, const float* up, std::int64_t n, float* out);
  // gpt-oss's gate: g = min(gate, 7), u = clamp(up, -7, 7),
  // out = g sigmoid(1.702 g) (u + 1); out may be gate or up.
  void (*swiglu_oai_mul)(const float* gate, const float* up, std::int64_t n, float* out);
  // y[i] = silu(x[i]) = x[i] sigmoid(x[i]) (silu_mul with up = 1); y may be x.
  void (*silu)(const float* x, std::int64_t n, float* y);
  // y[i] = 1 / (1 + e^-x[i]); y may be x.
  void (*sigmoid)(const float* x, std::int64_t n, float* y);
  // x[i] = cap tanh(x[i] / cap) (Gemma 2's final logit soft cap), in place.
  void (*softcap)(float* x, std::int64_t n, float cap);
  // One state row s[0, n) of the gated delta rule (recurrent_ops.cpp): with s
  // as it is before the step, *d = beta (v - decay (s . k)), then
  // s = decay s + *d k; returns decay (s . q) (s before the step). Both dot
  // products in one pass over s (rounding differs per level, as dot_f32's).
  float (*delta_row)(float* s, const float* k, const float* q, std::int64_t n, float decay,
                     float beta, float v, float* d);
};

// The tanh GELU's constants: the cubic term's and 2 sqrt(2/pi).
inline constexpr float kGeluCubic = 0.044715f;
inline constexpr float kGeluTwiceSqrt2OverPi = 1.5957691216057308f;
// gpt-oss's SwiGLU: the sigmoid's slope and the limit of gate and up.
inline constexpr float kSwigluOaiAlpha = 1.702f;
inline constexpr float kSwigluOaiLimit = 7.0f;

// The functions of `level` (the highest present at or below it).
const VecFns& vec_fns(CpuLevel level);
// The functions of active_cpu_level().
const VecFns& vec_fns();

namespace avx2 {
float dot_f32(const float* a, const float* b, std::int64_t n);
void f32_to_f16(const float* src, std::uint16_t* dst, std::int64_t n);
void f16_to_f32(const std::uint16_t* src, float* dst, std::int64_t n);
void scale_add(float* y, float a, float b, const float* x, std::int64_t n);
void silu_mul(const float* gate, const float* up, std::int64_t n, float* out);
void gelu_mul(const float* gate, const float* up, std::int64_t n, float* out);
void swiglu_oai_mul(const float* gate, const float* up, std::int64_t n, float* out);
void silu(const float* x, std::int64_t n, float* y);
void sigmoid(const float* x, std::int64_t n, float* y);
void softcap(float* x, std::int64_t n, float cap);
float delta_row(float* s, const float* k, const float* q, std::int64_t n, float decay, float beta,
                float v, float* d);
}  // namespace avx2

namespace avx512 {
void silu_mul(const float* gate, const float* up, std::int64_t n, float* out);
void gelu_mul(const float* gate, const float* up, std::int64_t n, float* out);
void swiglu_oai_mul(const float* gate, const float* up, std::int64_t n, float* out);
void silu(const float* x, std::int64_t n, float* y);
void sigmoid(const float* x, std::int64_t n, float* y);
void softcap(float* x, std::int64_t n, float cap);
float delta_row(float* s, const float* k, const float* q, std::int64_t n, float decay, float beta,
                float v, float* d);
}  // namespace avx512

}  // namespace seam::vec
