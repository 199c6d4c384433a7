// e^x in 8 lanes for the AVX2 + FMA units (attention's softmax, the gates, the
// logits scan): the scalar exp_nonpositive (attention_kernels.cpp)
// with FMA for the reduction r = x - n ln2 (a rounding fewer, same bound).
// Include only from units compiled with -mavx2 -mfma; internal linkage keeps
// each unit's copy its own.
#pragma once

#include <immintrin.h>

namespace seam {
namespace {

// e^x for x <= 0; 0 below -87 (and for -inf). e^r by its Taylor polynomial of
// degree kDegree: 6 is the scalar exp_nonpositive's (within a few ulp), 7 keeps
// the remainder below 2^-27 relative (the logits scan's kExpRelErr).
template <int kDegree = 6>
inline __m256 exp8_nonpositive(__m256 x) {
  static_assert(kDegree == 6 || kDegree == 7);
  const __m256 xc = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), xc);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606765330187e-06f), r);
  __m256 p = _mm256_set1_ps(kDegree == 7 ? 1.0f / 5040.0f : 1.0f / 720.0f);
  if constexpr (kDegree == 7) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i e =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  const __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  const __m256 tiny = _mm256_cmp_ps(x, _mm256_set1_ps(-87.0f), _CMP_LT_OQ);
  return _mm256_andnot_ps(tiny, y);
}

}  // namespace
}  // namespace seam
