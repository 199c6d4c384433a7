// AVX2 + FMA logits scan (logit_scan.h): 8 logits per step, exp in float
// (kExpRelErr), the sums in double. Compiled with -mavx2 -mfma; nothing inline
// is shared with baseline code (dot.h).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "compute/exp_avx2.h"
#include "compute/logit_scan.h"
#include "compute/reduce_avx2.h"

namespace seam::logit::avx2 {

namespace {

constexpr float kNegInf = -__builtin_inff();

inline double hsum(__m256d a) {
  __m128d h = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
  h = _mm_add_sd(h, _mm_unpackhi_pd(h, h));
  return _mm_cvtsd_f64(h);
}

// The best k ids seen so far, best first; ids arrive in increasing order, so
// on equal logits the one already kept stays ahead.
struct Best {
  const float* row;
  std::uint32_t* top;
  std::uint32_t k, count;
  float worst;  // the k-th best logit once k are kept (only better ones get in)

  float key(std::uint32_t v) const {
    const float l = row[v];
    return l != l ? kNegInf : l;
  }
  void offer(std::uint32_t v) {
    const float l = key(v);
    if (count == k) {
      if (!(l > worst)) return;
      --count;
    }
    std::uint32_t i = count;
    for (; i > 0 && l > key(top[i - 1]); --i) top[i] = top[i - 1];
    top[i] = v;
    if (++count == k) worst = key(top[k - 1]);
  }
};

struct Acc {
  __m256d z0, z1, s0, s1;
  std::uint32_t above;
};

// One step of 8 logits from `src` (ids v0..v0+7; lanes at or past `valid`
// are NaN padding and are ignored).
inline void step(const float* src, std::uint32_t v0, unsigned valid_bits, __m256 vmx, __m256d vmxd,
                 __m256 vtl, __m256i vt, Acc& a, Best* best) {
  const __m256 l = _mm256_loadu_ps(src);
  const __m256 finite = _mm256_cmp_ps(l, _mm256_set1_ps(kNegInf), _CMP_GT_OQ);
  // Lanes with p = 0 (-inf, NaN) stand at the maximum, d = 0, and their e is zeroed.
  const __m256 ls = _mm256_blendv_ps(vmx, l, finite);
  const __m256 d = _mm256_sub_ps(ls, vmx);
  const __m256 present =
      _mm256_and_ps(finite, _mm256_cmp_ps(d, _mm256_set1_ps(-87.0f), _CMP_GE_OQ));
  const __m256 e =
      _mm256_and_ps(exp8_nonpositive<7>(_mm256_max_ps(d, _mm256_set1_ps(-87.0f))), present);
  // d again in double, exactly (l and the maximum are floats).
  const __m256d dl = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(ls)), vmxd);
  const __m256d dh = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(ls, 1)), vmxd);
  const __m256d el = _mm256_cvtps_pd(_mm256_castps256_ps128(e));
  const __m256d eh = _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1));
  a.z0 = _mm256_add_pd(a.z0, el);
  a.z1 = _mm256_add_pd(a.z1, eh);
  a.s0 = _mm256_fmadd_pd(el, dl, a.s0);
  a.s1 = _mm256_fmadd_pd(eh, dh, a.s1);
  // Rank: above the target, or equal with a lower id.
  const __m256i idx = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(v0)),
                                       _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256 lower_id = _mm256_castsi256_ps(_mm256_cmpgt_epi32(vt, idx));
  const __m256 ahead = _mm256_or_ps(_mm256_cmp_ps(l, vtl, _CMP_GT_OQ),
                                    _mm256_and_ps(_mm256_cmp_ps(l, vtl, _CMP_EQ_OQ), lower_id));
  a.above += static_cast<std::uint32_t>(
      __builtin_popcount(static_cast<unsigned>(_mm256_movemask_ps(ahead)) & valid_bits));
  if (best) {
    unsigned cand = valid_bits;
    if (best->count == best->k)
      cand &= static_cast<unsigned>(
          _mm256_movemask_ps(_mm256_cmp_ps(l, _mm256_set1_ps(best->worst), _CMP_GT_OQ)));
    while (cand) {
      best->offer(v0 + static_cast<std::uint32_t>(__builtin_ctz(cand)));
      cand &= cand - 1;
    }
  }
}

}  // namespace

Scan scan(const float* row, std::size_t n, std::uint32_t t, std::uint32_t k, std::uint32_t* top) {
  if (k > kScanMaxTop) return scalar::scan(row, n, t, k, top);
  __m256 m0 = _mm256_set1_ps(kNegInf), m1 = m0;
  std::size_t v = 0;
  // max_ps(x, m) returns m when x is NaN: NaN logits are skipped.
  for (; v + 16 <= n; v += 16) {
    m0 = _mm256_max_ps(_mm256_loadu_ps(row + v), m0);
    m1 = _mm256_max_ps(_mm256_loadu_ps(row + v + 8), m1);
  }
  for (; v + 8 <= n; v += 8) m0 = _mm256_max_ps(_mm256_loadu_ps(row + v), m0);
  float mx = hmax8(_mm256_max_ps(m0, m1));
  for (; v < n; ++v)
    if (row[v] > mx) mx = row[v];
  // No finite logit (nothing to normalise) or +inf: the reference's answer.
  if (!(mx > kNegInf) || mx == -kNegInf) return scalar::scan(row, n, t, k, top);

  Scan s;
  s.max = mx;
  const float tl = row[t];
  const __m256 vmx = _mm256_set1_ps(mx), vtl = _mm256_set1_ps(tl);
  const __m256d vmxd = _mm256_set1_pd(static_cast<double>(mx));
  const __m256i vt = _mm256_set1_epi32(static_cast<int>(t));
  Acc a{_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), 0};
  if (k > n) k = static_cast<std::uint32_t>(n);
  Best best{row, top, k, 0, kNegInf};
  Best* bp = k > 0 ? &best : nullptr;
  v = 0;
  for (; v + 8 <= n; v += 8)
    step(row + v, static_cast<std::uint32_t>(v), 0xffu, vmx, vmxd, vtl, vt, a, bp);
  if (v < n) {
    float pad[8];
    const std::size_t rest = n - v;
    for (std::size_t j = 0; j < 8; ++j) pad[j] = j < rest ? row[v + j] : __builtin_nanf("");
    step(pad, static_cast<std::uint32_t>(v), (1u << rest) - 1, vmx, vmxd, vtl, vt, a, bp);
  }
  s.sum_exp = hsum(_mm256_add_pd(a.z0, a.z1));
  s.sum_exp_d = hsum(_mm256_add_pd(a.s0, a.s1));
  s.above = a.above;
  if (tl != tl) {  // a NaN target ranks below every number, after the NaNs before it
    for (std::size_t u = 0; u < t; ++u)
      if (row[u] == row[u]) ++s.above;
  }
  return s;
}

}  // namespace seam::logit::avx2
