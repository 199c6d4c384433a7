// e^x and the soft cap in 16 lanes for the AVX-512 units (attention's softmax,
// the gates, the logit cap): the reduction and polynomial of exp_avx2.h's
// exp8_nonpositive (degree 6), 2^n by vscalefps. Include only from units
// compiled with the AVX-512 flags; internal linkage keeps each unit's copy its
// own.
#pragma once

#include <immintrin.h>

namespace seam {
namespace {

// e^x for x <= 0; 0 below -87 (and for -inf).
inline __m512 exp16_nonpositive(__m512 x) {
  const __m512 xc = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), xc);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187e-06f), r);
  __m512 p = _mm512_set1_ps(1.0f / 720.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  const __mmask16 tiny = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_LT_OQ);
  return _mm512_maskz_mov_ps(static_cast<__mmask16>(~tiny), _mm512_scalef_ps(p, n));
}

// cap tanh(x / cap) (Gemma 2's logit soft cap) in 16 lanes: tanh(y) =
// sign(y) (1 - e) / (1 + e) with e = e^-2|y| <= 1, no overflow. Within a few
// ulp of cap per element (the exp's error, and 1 - e's cancellation near 0,
// both absolute), far below what the F16 cache's rounding of K moves an
// attention score by. A libm tanhf per score was a quarter of a
// Gemma-2-shaped prefill after 4,096 cells.
inline __m512 softcap16(__m512 x, float cap) {
  const __m512i sign = _mm512_set1_epi32(static_cast<int>(0x80000000u));
  const __m512 y = _mm512_div_ps(x, _mm512_set1_ps(cap));
  const __m512i y_sign = _mm512_and_si512(_mm512_castps_si512(y), sign);
  // -2|y|: 2y with its sign bit set.
  const __m512 neg2 =
      _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(_mm512_add_ps(y, y)), sign));
  const __m512 e = exp16_nonpositive(neg2), one = _mm512_set1_ps(1.0f);
  const __m512 t = _mm512_div_ps(_mm512_sub_ps(one, e), _mm512_add_ps(one, e));
  return _mm512_mul_ps(_mm512_set1_ps(cap),
                       _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(t), y_sign)));
}

}  // namespace
}  // namespace seam
