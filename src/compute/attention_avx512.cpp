// AVX-512 attention step (attention_kernels.h): query_chunk in 16-lane
// registers, the chunk's 32 scores in two. load_chunk stays the AVX2 one
// (converting and transposing K is not where the time goes). Compiled with
// the AVX-512 flags; see dot.h on keeping this unit's code out of baseline
// callers (intrinsics and plain loops only).
// GCC 12's AVX-512 headers self-initialize their "undefined" vectors
// (__m512 __Y = __Y), which -Wuninitialized reports once inlined here.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#include <math.h>

#include <cstdint>

#include "compute/attention_kernels.h"

namespace seam::attn::avx512 {

namespace {

constexpr int C = kAttnChunk;

// exp_nonpositive (attention_kernels.cpp) in 16 lanes; 2^n by vscalefps.
inline __m512 exp16(__m512 x) {
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

// Lanes [lo, hi) of 16 as a mask (lo, hi in [0, 16]).
inline __mmask16 lanes(int lo, int hi) {
  const std::uint32_t upto_hi = (1u << hi) - 1u, below_lo = (1u << lo) - 1u;
  return static_cast<__mmask16>(upto_hi & ~below_lo);
}

inline int clamp16(int x) { return x < 0 ? 0 : (x > 16 ? 16 : x); }

}  // namespace

void query_chunk(const float* q, const float* kt, const float* v, int jlo, int jhi, int hd,
                 float scale, float softcap, float* m, float* l, float* acc) {
  static_assert(C == 32, "the score registers below hold 32 lanes");
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, t0 = s0, t1 = s0;
  int d = 0;
  for (; d + 2 <= hd; d += 2) {  // two dimensions at once: independent FMA chains
    const __m512 qa = _mm512_set1_ps(q[d]), qb = _mm512_set1_ps(q[d + 1]);
    const float* ka = kt + d * C;
    s0 = _mm512_fmadd_ps(qa, _mm512_loadu_ps(ka), s0);
    s1 = _mm512_fmadd_ps(qa, _mm512_loadu_ps(ka + 16), s1);
    t0 = _mm512_fmadd_ps(qb, _mm512_loadu_ps(ka + C), t0);
    t1 = _mm512_fmadd_ps(qb, _mm512_loadu_ps(ka + C + 16), t1);
  }
  if (d < hd) {
    const __m512 qa = _mm512_set1_ps(q[d]);
    s0 = _mm512_fmadd_ps(qa, _mm512_loadu_ps(kt + d * C), s0);
    s1 = _mm512_fmadd_ps(qa, _mm512_loadu_ps(kt + d * C + 16), s1);
  }
  const __m512 vs = _mm512_set1_ps(scale);
  __m512 x0 = _mm512_mul_ps(_mm512_add_ps(s0, t0), vs);
  __m512 x1 = _mm512_mul_ps(_mm512_add_ps(s1, t1), vs);
  alignas(64) float sc[C];
  if (softcap > 0.0f) {
    _mm512_store_ps(sc, x0);
    _mm512_store_ps(sc + 16, x1);
    for (int j = jlo; j < jhi; ++j) sc[j] = softcap * tanhf(sc[j] / softcap);
    x0 = _mm512_load_ps(sc);
    x1 = _mm512_load_ps(sc + 16);
  }
  // Lanes outside [jlo, jhi) get -inf: weight 0 below, and no effect on the max.
  const __m512 ninf = _mm512_set1_ps(-__builtin_inff());
  x0 = _mm512_mask_blend_ps(lanes(clamp16(jlo), clamp16(jhi)), ninf, x0);
  x1 = _mm512_mask_blend_ps(lanes(clamp16(jlo - 16), clamp16(jhi - 16)), ninf, x1);
  const float mx = _mm512_reduce_max_ps(_mm512_max_ps(x0, x1));
  const float m_old = *m;
  const float m_new = m_old > mx ? m_old : mx;
  if (m_old != m_new) {
    const float corr = exp_nonpositive(m_old - m_new);  // 0 when m was -inf
    *l *= corr;
    const __m512 vc = _mm512_set1_ps(corr);
    for (int d0 = 0; d0 < hd; d0 += 16) {
      const __mmask16 k = lanes(0, clamp16(hd - d0));
      _mm512_mask_storeu_ps(acc + d0, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, acc + d0), vc));
    }
    *m = m_new;
  }
  const __m512 vm = _mm512_set1_ps(m_new);
  x0 = exp16(_mm512_sub_ps(x0, vm));
  x1 = exp16(_mm512_sub_ps(x1, vm));
  *l += _mm512_reduce_add_ps(_mm512_add_ps(x0, x1));
  _mm512_store_ps(sc, x0);
  _mm512_store_ps(sc + 16, x1);

  // acc += sum_j p_j v_j, 64 then 16 (masked) columns of acc held in registers.
  int d0 = 0;
  for (; d0 + 64 <= hd; d0 += 64) {
    __m512 a0 = _mm512_loadu_ps(acc + d0), a1 = _mm512_loadu_ps(acc + d0 + 16);
    __m512 a2 = _mm512_loadu_ps(acc + d0 + 32), a3 = _mm512_loadu_ps(acc + d0 + 48);
    for (int j = jlo; j < jhi; ++j) {
      const __m512 p = _mm512_set1_ps(sc[j]);
      const float* vj = v + static_cast<std::size_t>(j) * hd + d0;
      a0 = _mm512_fmadd_ps(p, _mm512_loadu_ps(vj), a0);
      a1 = _mm512_fmadd_ps(p, _mm512_loadu_ps(vj + 16), a1);
      a2 = _mm512_fmadd_ps(p, _mm512_loadu_ps(vj + 32), a2);
      a3 = _mm512_fmadd_ps(p, _mm512_loadu_ps(vj + 48), a3);
    }
    _mm512_storeu_ps(acc + d0, a0);
    _mm512_storeu_ps(acc + d0 + 16, a1);
    _mm512_storeu_ps(acc + d0 + 32, a2);
    _mm512_storeu_ps(acc + d0 + 48, a3);
  }
  for (; d0 < hd; d0 += 16) {
    const __mmask16 k = lanes(0, clamp16(hd - d0));
    __m512 a0 = _mm512_maskz_loadu_ps(k, acc + d0);
    for (int j = jlo; j < jhi; ++j)
      a0 = _mm512_fmadd_ps(_mm512_set1_ps(sc[j]),
                           _mm512_maskz_loadu_ps(k, v + static_cast<std::size_t>(j) * hd + d0), a0);
    _mm512_mask_storeu_ps(acc + d0, k, a0);
  }
}

}  // namespace seam::attn::avx512
