#include "compute/vec.h"

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

constexpr VecFns kScalar = {dot_f32_scalar,  f32_to_f16_scalar, f16_to_f32_scalar, scale_add_scalar,
                            silu_mul_scalar, gelu_mul_scalar,   silu_scalar,       sigmoid_scalar,
                            softcap_scalar,  delta_row_scalar};
constexpr VecFns kAvx2 = {avx2::dot_f32,  avx2::f32_to_f16, avx2::f16_to_f32, avx2::scale_add,
                          avx2::silu_mul, avx2::gelu_mul,   avx2::silu,       avx2::sigmoid,
                          avx2::softcap,  avx2::delta_row};
constexpr VecFns kAvx512 = {avx2::dot_f32,    avx2::f32_to_f16, avx2::f16_to_f32, avx2::scale_add,
                            avx512::silu_mul, avx512::gelu_mul, avx512::silu,     avx512::sigmoid,
                            avx512::softcap,  avx512::delta_row};

}  // namespace

const VecFns& vec_fns(CpuLevel level) {
  return level >= CpuLevel::Avx512 ? kAvx512 : level >= CpuLevel::Avx2 ? kAvx2 : kScalar;
}

const VecFns& vec_fns() {
  static const VecFns& fns = vec_fns(active_cpu_level());
  return fns;
}

}  // namespace seam::vec
