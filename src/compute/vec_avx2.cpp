// AVX2 + FMA + F16C row primitives (vec.h). Compiled with -mavx2 -mfma -mf16c;
// see dot.h on keeping this unit's code out of baseline callers.
#include <immintrin.h>

#include <cstdint>

#include "compute/exp_avx2.h"
#include "compute/reduce_avx2.h"
#include "compute/vec.h"

namespace seam::vec::avx2 {

float dot_f32(const float* a, const float* b, std::int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  }
  float s = hsum8(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

void f32_to_f16(const float* src, std::uint16_t* dst, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  for (; i < n; ++i) {
    dst[i] = static_cast<std::uint16_t>(_cvtss_sh(src[i], _MM_FROUND_TO_NEAREST_INT));
  }
}

void f16_to_f32(const std::uint16_t* src, float* dst, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) dst[i] = _cvtsh_ss(src[i]);
}

void scale_add(float* y, float a, float b, const float* x, std::int64_t n) {
  const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 ay = _mm256_mul_ps(va, _mm256_loadu_ps(y + i));
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(vb, _mm256_loadu_ps(x + i), ay));
  }
  for (; i < n; ++i) y[i] = a * y[i] + b * x[i];
}

namespace {

// out[i] = f(a[i], b[i]) 8 lanes at a time (b may be null: f gets 1s). The
// last n % 8 go through the same lanes (masked), so an element's value does
// not depend on where it sits in the call: a prompt read in one batch or
// token by token gives the same activations.
template <class F>
void map8(const float* a, const float* b, std::int64_t n, float* out, F f) {
  const __m256 one = _mm256_set1_ps(1.0f);
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, f(_mm256_loadu_ps(a + i), b ? _mm256_loadu_ps(b + i) : one));
  if (i < n) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n - i)), lane);
    _mm256_maskstore_ps(out + i, m,
                        f(_mm256_maskload_ps(a + i, m), b ? _mm256_maskload_ps(b + i, m) : one));
  }
}

// sigmoid(t) with e = e^-|t| <= 1, so the exp never overflows: 1 / (1 + e)
// for t >= 0, e / (1 + e) below.
inline __m256 sigmoid8(__m256 t) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 e = exp8_nonpositive(_mm256_or_ps(t, _mm256_set1_ps(-0.0f)));  // e^-|t|
  const __m256 num = _mm256_blendv_ps(one, e, t);  // the sign bit of t picks e
  return _mm256_div_ps(num, _mm256_add_ps(one, e));
}

// cap tanh(x / cap) in 8 lanes, as exp_avx512.h's softcap16 (which says why);
// attention_avx2.cpp caps its scores through softcap() below.
inline __m256 softcap8(__m256 x, float cap) {
  const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f), vcap = _mm256_set1_ps(cap);
  const __m256 y = _mm256_div_ps(x, vcap);
  const __m256 e = exp8_nonpositive(_mm256_or_ps(_mm256_add_ps(y, y), sign));  // e^-2|y|
  const __m256 t = _mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e));
  return _mm256_mul_ps(vcap, _mm256_or_ps(t, _mm256_and_ps(y, sign)));
}

}  // namespace

// The gates are g sigmoid(t) up: SiLU t = g, the tanh GELU t = 2 sqrt(2/pi)
// (g + 0.044715 g^3) (0.5 (1 + tanh(z)) = sigmoid(2 z)). The scalar std::exp
// per element cost a 135M-shape decode ~3% of its time, and tanhf 38% of a
// Gemma-shaped prefill. Multiplying by up = 1 is exact: silu(x) is
// silu_mul(x, 1) bit for bit.
void silu_mul(const float* gate, const float* up, std::int64_t n, float* out) {
  map8(gate, up, n, out,
       [](__m256 g, __m256 u) { return _mm256_mul_ps(_mm256_mul_ps(g, sigmoid8(g)), u); });
}

void gelu_mul(const float* gate, const float* up, std::int64_t n, float* out) {
  const __m256 c = _mm256_set1_ps(kGeluCubic), k = _mm256_set1_ps(kGeluTwiceSqrt2OverPi);
  map8(gate, up, n, out, [&](__m256 g, __m256 u) {
    const __m256 t = _mm256_mul_ps(k, _mm256_fmadd_ps(_mm256_mul_ps(c, g), _mm256_mul_ps(g, g), g));
    return _mm256_mul_ps(_mm256_mul_ps(g, sigmoid8(t)), u);
  });
}

// min and max return their second operand for a NaN, as std::min(gate, 7)
// and std::clamp do: a NaN gate or up stays NaN.
void swiglu_oai_mul(const float* gate, const float* up, std::int64_t n, float* out) {
  const __m256 lim = _mm256_set1_ps(kSwigluOaiLimit), neg = _mm256_set1_ps(-kSwigluOaiLimit);
  const __m256 alpha = _mm256_set1_ps(kSwigluOaiAlpha), one = _mm256_set1_ps(1.0f);
  map8(gate, up, n, out, [&](__m256 g, __m256 u) {
    g = _mm256_min_ps(lim, g);
    u = _mm256_max_ps(neg, _mm256_min_ps(lim, u));
    return _mm256_mul_ps(_mm256_mul_ps(g, sigmoid8(_mm256_mul_ps(alpha, g))),
                         _mm256_add_ps(u, one));
  });
}

void silu(const float* x, std::int64_t n, float* y) { silu_mul(x, nullptr, n, y); }

void sigmoid(const float* x, std::int64_t n, float* y) {
  map8(x, nullptr, n, y, [](__m256 t, __m256) { return sigmoid8(t); });
}

void softcap(float* x, std::int64_t n, float cap) {
  map8(x, nullptr, n, x, [&](__m256 v, __m256) { return softcap8(v, cap); });
}

// dot_f32's sums for s . k and s . q in one pass over s (the same additions in
// the same order as two dot_f32 calls), then scale_add's update: the delta
// rule read each state row three times, through three calls, 16% of a hybrid
// model's prefill (perf, Zen 5).
float delta_row(float* s, const float* k, const float* q, std::int64_t n, float decay, float beta,
                float v, float* d) {
  __m256 k0 = _mm256_setzero_ps(), k1 = _mm256_setzero_ps();
  __m256 q0 = _mm256_setzero_ps(), q1 = _mm256_setzero_ps();
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 s0 = _mm256_loadu_ps(s + i), s1 = _mm256_loadu_ps(s + i + 8);
    k0 = _mm256_fmadd_ps(s0, _mm256_loadu_ps(k + i), k0);
    k1 = _mm256_fmadd_ps(s1, _mm256_loadu_ps(k + i + 8), k1);
    q0 = _mm256_fmadd_ps(s0, _mm256_loadu_ps(q + i), q0);
    q1 = _mm256_fmadd_ps(s1, _mm256_loadu_ps(q + i + 8), q1);
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 s0 = _mm256_loadu_ps(s + i);
    k0 = _mm256_fmadd_ps(s0, _mm256_loadu_ps(k + i), k0);
    q0 = _mm256_fmadd_ps(s0, _mm256_loadu_ps(q + i), q0);
  }
  float sk = hsum8(_mm256_add_ps(k0, k1)), sq = hsum8(_mm256_add_ps(q0, q1));
  for (; i < n; ++i) {
    sk += s[i] * k[i];
    sq += s[i] * q[i];
  }
  *d = beta * (v - decay * sk);
  scale_add(s, decay, *d, k, n);
  return decay * sq;
}

}  // namespace seam::vec::avx2
