// AVX-512 row primitives (vec.h): the gates, SiLU, sigmoid, the soft cap and
// the delta rule's state row in 16 lanes; the others stay the AVX2 ones
// (vec.cpp). Compiled with the AVX-512 flags; see dot.h on keeping this
// unit's code out of baseline callers.
// GCC 12's AVX-512 headers self-initialize their "undefined" vectors
// (__m512 __Y = __Y), which -Wuninitialized reports once inlined here.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

#include "compute/exp_avx512.h"
#include "compute/vec.h"

namespace seam::vec::avx512 {

namespace {

// vec_avx2.cpp's map8 in 16 lanes: out[i] = f(a[i], b[i]) (b null: 1s), the
// last n % 16 through the same lanes, masked.
template <class F>
void map16(const float* a, const float* b, std::int64_t n, float* out, F f) {
  const __m512 one = _mm512_set1_ps(1.0f);
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out + i, f(_mm512_loadu_ps(a + i), b ? _mm512_loadu_ps(b + i) : one));
  if (i < n) {
    const auto k = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(
        out + i, k, f(_mm512_maskz_loadu_ps(k, a + i), b ? _mm512_maskz_loadu_ps(k, b + i) : one));
  }
}

// vec_avx2.cpp's sigmoid8: e = e^-|t|, 1 / (1 + e) for t >= 0, e / (1 + e) below.
inline __m512 sigmoid16(__m512 t) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512i sign = _mm512_set1_epi32(static_cast<int>(0x80000000u));
  const __m512i ti = _mm512_castps_si512(t);
  const __m512 e = exp16_nonpositive(_mm512_castsi512_ps(_mm512_or_si512(ti, sign)));
  const __m512 num = _mm512_mask_blend_ps(_mm512_test_epi32_mask(ti, sign), one, e);
  return _mm512_div_ps(num, _mm512_add_ps(one, e));
}

}  // namespace

// The gates and activations of vec_avx2.cpp, the same operations in the same
// order per element.
void silu_mul(const float* gate, const float* up, std::int64_t n, float* out) {
  map16(gate, up, n, out,
        [](__m512 g, __m512 u) { return _mm512_mul_ps(_mm512_mul_ps(g, sigmoid16(g)), u); });
}

void gelu_mul(const float* gate, const float* up, std::int64_t n, float* out) {
  const __m512 c = _mm512_set1_ps(kGeluCubic), k = _mm512_set1_ps(kGeluTwiceSqrt2OverPi);
  map16(gate, up, n, out, [&](__m512 g, __m512 u) {
    const __m512 t = _mm512_mul_ps(k, _mm512_fmadd_ps(_mm512_mul_ps(c, g), _mm512_mul_ps(g, g), g));
    return _mm512_mul_ps(_mm512_mul_ps(g, sigmoid16(t)), u);
  });
}

void swiglu_oai_mul(const float* gate, const float* up, std::int64_t n, float* out) {
  const __m512 lim = _mm512_set1_ps(kSwigluOaiLimit), neg = _mm512_set1_ps(-kSwigluOaiLimit);
  const __m512 alpha = _mm512_set1_ps(kSwigluOaiAlpha), one = _mm512_set1_ps(1.0f);
  map16(gate, up, n, out, [&](__m512 g, __m512 u) {
    g = _mm512_min_ps(lim, g);
    u = _mm512_max_ps(neg, _mm512_min_ps(lim, u));
    return _mm512_mul_ps(_mm512_mul_ps(g, sigmoid16(_mm512_mul_ps(alpha, g))),
                         _mm512_add_ps(u, one));
  });
}

void silu(const float* x, std::int64_t n, float* y) { silu_mul(x, nullptr, n, y); }

void sigmoid(const float* x, std::int64_t n, float* y) {
  map16(x, nullptr, n, y, [](__m512 t, __m512) { return sigmoid16(t); });
}

void softcap(float* x, std::int64_t n, float cap) {
  map16(x, nullptr, n, x, [&](__m512 v, __m512) { return softcap16(v, cap); });
}

// vec_avx2.cpp's delta_row in 16 lanes: s . k and s . q in one pass over s
// (a 128-wide row is 8 registers), then s = decay s + d k.
float delta_row(float* s, const float* k, const float* q, std::int64_t n, float decay, float beta,
                float v, float* d) {
  __m512 ak = _mm512_setzero_ps(), aq = _mm512_setzero_ps();
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 si = _mm512_loadu_ps(s + i);
    ak = _mm512_fmadd_ps(si, _mm512_loadu_ps(k + i), ak);
    aq = _mm512_fmadd_ps(si, _mm512_loadu_ps(q + i), aq);
  }
  if (i < n) {  // the tail through the same lanes, masked (0 * 0 adds nothing)
    const auto m = static_cast<__mmask16>((1u << (n - i)) - 1u);
    const __m512 si = _mm512_maskz_loadu_ps(m, s + i);
    ak = _mm512_fmadd_ps(si, _mm512_maskz_loadu_ps(m, k + i), ak);
    aq = _mm512_fmadd_ps(si, _mm512_maskz_loadu_ps(m, q + i), aq);
  }
  *d = beta * (v - decay * _mm512_reduce_add_ps(ak));
  const __m512 vd = _mm512_set1_ps(decay), vdd = _mm512_set1_ps(*d);
  for (i = 0; i + 16 <= n; i += 16)
    _mm512_storeu_ps(s + i, _mm512_fmadd_ps(vdd, _mm512_loadu_ps(k + i),
                                            _mm512_mul_ps(vd, _mm512_loadu_ps(s + i))));
  if (i < n) {
    const auto m = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(s + i, m,
                          _mm512_fmadd_ps(vdd, _mm512_maskz_loadu_ps(m, k + i),
                                          _mm512_mul_ps(vd, _mm512_maskz_loadu_ps(m, s + i))));
  }
  return decay * _mm512_reduce_add_ps(aq);
}

}  // namespace seam::vec::avx512
