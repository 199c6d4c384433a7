// Horizontal reductions of 8 float lanes for the AVX2 + FMA units (dot,
// attention, vec, the activation quantizers, the logits scan), one tree for
// all of them: the two 128-bit halves, then lanes 2-3 onto 0-1, then lane 1
// onto 0. Include only from units compiled with -mavx2 -mfma; internal
// linkage keeps each unit's copy its own (as exp_avx2.h).
#pragma once

#include <immintrin.h>

namespace seam {
namespace {

inline float hsum8(__m256 x) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// The largest lane (a NaN lane's result follows max_ps: callers keep NaN out).
inline float hmax8(__m256 x) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace
}  // namespace seam
