#include "compute/vec.h"

#include <algorithm>
#include <cmath>

#include "core/half.h"

namespace seam::vec {
namespace {

float dot_f32_scalar(const float* a, const float* b, std::int64_t n) {
  float s = 0.0f;
  for (std::int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

void f32_to_f16_scalar(const float* src, std::uint16_t* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] = f32_to_fp16(src[i]);
}

void f16_to_f32_scalar(const std::uint16_t* src, float* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] = fp16_to_f32(src[i]);
}

void scale_add_scalar(float* y, float a, float b, const float* x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = a * y[i] + b * x[i];
}

void silu_mul_scalar(const float* gate, const float* up, std::int64_t n, float* out) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

// As the SIMD levels: g sigmoid(t) with e = e^-|t| (no cancellation in
// 1 + tanh(z) where tanh(z) is near -1).
void gelu_mul_scalar(const float* gate, const float* up, std::int64_t n, float* out) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    const float t = kGeluTwiceSqrt2OverPi * (g + kGeluCubic * g * g * g);
    const float e = std::exp(-std::fabs(t));
    out[i] = g * ((t < 0.0f ? e : 1.0f) / (1.0f + e)) * up[i];
  }
}

void swiglu_oai_mul_scalar(const float* gate, const float* up, std::int64_t n, float* out) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float g = std::min(gate[i], kSwigluOaiLimit);
    const float u = std::clamp(up[i], -kSwigluOaiLimit, kSwigluOaiLimit);
    out[i] = g / (1.0f + std::exp(-kSwigluOaiAlpha * g)) * (u + 1.0f);
  }
}

void silu_scalar(const float* x, std::int64_t n, float* y) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] / (1.0f + std::exp(-x[i]));
}

void sigmoid_scalar(const float* x, std::int64_t n, float* y) {
  for (std::int64_t i = 0; i < n; ++i) {
    if (x[i] >= 0.0f) {
      y[i] = 1.0f / (1.0f + std::exp(-x[i]));
    } else {
      const float e = std::exp(x[i]);
      y[i] = e / (1.0f + e);
    }
  }
}

void softcap_scalar(float* x, std::int64_t n, float cap) {
  for (std::int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] / cap);
}

float delta_row_scalar(float* s, const float* k, const float* q, std::int64_t n, float decay,
                       float beta, float v, float* d) {
  const float sk = decay * dot_f32_scalar(s, k, n);
  const float sq = decay * dot_f32_scalar(s, q, n);
  *d = beta * (v - sk);
  scale_add_scalar(s, decay, *d, k, n);
  return sq;
}

constexpr VecFns kScalar = {.dot_f32 = dot_f32_scalar,
                            .f32_to_f16 = f32_to_f16_scalar,
                            .f16_to_f32 = f16_to_f32_scalar,
                            .scale_add = scale_add_scalar,
                            .silu_mul = silu_mul_scalar,
                            .gelu_mul = gelu_mul_scalar,
                            .swiglu_oai_mul = swiglu_oai_mul_scalar,
                            .silu = silu_scalar,
                            .sigmoid = sigmoid_scalar,
                            .softcap = softcap_scalar,
                            .delta_row = delta_row_scalar};
constexpr VecFns kAvx2 = {.dot_f32 = avx2::dot_f32,
                          .f32_to_f16 = avx2::f32_to_f16,
                          .f16_to_f32 = avx2::f16_to_f32,
                          .scale_add = avx2::scale_add,
                          .silu_mul = avx2::silu_mul,
                          .gelu_mul = avx2::gelu_mul,
                          .swiglu_oai_mul = avx2::swiglu_oai_mul,
                          .silu = avx2::silu,
                          .sigmoid = avx2::sigmoid,
                          .softcap = avx2::softcap,
                          .delta_row = avx2::delta_row};
// The AVX2 dot product, conversions and scale_add serve this level too.
constexpr VecFns kAvx512 = {.dot_f32 = avx2::dot_f32,
                            .f32_to_f16 = avx2::f32_to_f16,
                            .f16_to_f32 = avx2::f16_to_f32,
                            .scale_add = avx2::scale_add,
                            .silu_mul = avx512::silu_mul,
                            .gelu_mul = avx512::gelu_mul,
                            .swiglu_oai_mul = avx512::swiglu_oai_mul,
                            .silu = avx512::silu,
                            .sigmoid = avx512::sigmoid,
                            .softcap = avx512::softcap,
                            .delta_row = avx512::delta_row};

}  // namespace

const VecFns& vec_fns(CpuLevel level) {
  return level >= CpuLevel::Avx512 ? kAvx512 : level >= CpuLevel::Avx2 ? kAvx2 : kScalar;
}

const VecFns& vec_fns() {
  static const VecFns& fns = vec_fns(active_cpu_level());
  return fns;
}

}  // namespace seam::vec
