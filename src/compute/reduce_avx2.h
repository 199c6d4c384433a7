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

// The eight sums hsum8(x[c]), c < 8, as one register (lane c), by the same
// additions: the registers are folded in pairs, each step one level of
// hsum8's tree for two of them at once (lane i + i + 4, then + 2, + 1), 21
// operations where eight hsum8 and their stores spend 56. The last step
// leaves the register taken in position i in lane i / 2 (even i) or
// 4 + i / 2 (odd i), so position i takes register kOrder[i] = 4 (i % 2) + i / 2.
inline __m256 hsum8x8(const float (*x)[8]) {
  constexpr int kOrder[8] = {0, 4, 1, 5, 2, 6, 3, 7};
  __m256 a[4];  // pairs: lanes 0-3 position 2p's i + (i + 4), lanes 4-7 2p + 1's
  for (int p = 0; p < 4; ++p) {
    const __m256 u = _mm256_load_ps(x[kOrder[2 * p]]), v = _mm256_load_ps(x[kOrder[2 * p + 1]]);
    a[p] = _mm256_add_ps(_mm256_permute2f128_ps(u, v, 0x20), _mm256_permute2f128_ps(u, v, 0x31));
  }
  __m256 b[2];  // (+ 2): per 128-bit half, two lanes of each of two positions
  for (int q = 0; q < 2; ++q) {
    const __m256d u = _mm256_castps_pd(a[2 * q]), v = _mm256_castps_pd(a[2 * q + 1]);
    b[q] = _mm256_add_ps(_mm256_castpd_ps(_mm256_unpacklo_pd(u, v)),
                         _mm256_castpd_ps(_mm256_unpackhi_pd(u, v)));
  }
  return _mm256_add_ps(_mm256_shuffle_ps(b[0], b[1], 0x88), _mm256_shuffle_ps(b[0], b[1], 0xDD));
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
