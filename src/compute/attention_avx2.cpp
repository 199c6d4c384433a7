// AVX2 + FMA + F16C attention steps (attention_kernels.h). Compiled with
// -mavx2 -mfma -mf16c; see dot.h on keeping this unit's code out of baseline
// callers (no inline library templates here: intrinsics and plain loops only).
#include <immintrin.h>
#include <math.h>

#include <cstdint>
#include <cstring>

#include "compute/attention_kernels.h"
#include "compute/exp_avx2.h"
#include "compute/reduce_avx2.h"
#include "compute/vec.h"

namespace seam::attn::avx2 {

namespace {

constexpr int C = kAttnChunk;
static_assert(C % 8 == 0);

// Elements [d, d + 8) of one kv head's row at `row` (d + 8 <= hd; for Q8_0
// the 8 lie in one block since d is a multiple of 8).
template <KvType t>
inline __m256 load8(const std::byte* row, int d) {
  if constexpr (t == KvType::F32)
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + d);
  else if constexpr (t == KvType::F16)
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * d)));
  const std::byte* blk = row + (d / 32) * 34;  // BlockQ8_0: F16 scale, 32 int8
  std::uint16_t h;
  std::memcpy(&h, blk, 2);
  const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 2 + d % 32));
  const __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8));
  return _mm256_mul_ps(q, _mm256_set1_ps(_cvtsh_ss(h)));
}

template <KvType t>
inline float load1(const std::byte* row, int d) {
  if constexpr (t == KvType::F32) {
    float x;
    std::memcpy(&x, row + 4 * d, 4);
    return x;
  }
  std::uint16_t h;
  if constexpr (t == KvType::F16) {
    std::memcpy(&h, row + 2 * d, 2);
    return _cvtsh_ss(h);
  }
  const std::byte* blk = row + (d / 32) * 34;
  std::memcpy(&h, blk, 2);
  return static_cast<float>(static_cast<std::int8_t>(blk[2 + d % 32])) * _cvtsh_ss(h);
}

// r[i][k] <-> r[k][i] for an 8x8 block.
inline void transpose8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

}  // namespace

namespace {

// load_chunk for one cache type: the type is fixed at compile time so the
// inner loops carry no branch on it.
template <KvType t>
void load_chunk_t(const KvHead& kv, const std::uint32_t* cells, int nc, int hd, float* kt,
                  float* v) {
  const int hd8 = hd & ~7;
  for (int jb = 0; jb < C; jb += 8) {
    const int nv = nc - jb < 0 ? 0 : (nc - jb > 8 ? 8 : nc - jb);
    const std::byte* row[8];
    for (int i = 0; i < nv; ++i) row[i] = kv.k + slice_offset(kv, cells[jb + i]);
    for (int d0 = 0; d0 < hd8; d0 += 8) {
      __m256 r[8];
      if (nv == 8) {
        for (int i = 0; i < 8; ++i) r[i] = load8<t>(row[i], d0);
      } else {
        for (int i = 0; i < 8; ++i) r[i] = i < nv ? load8<t>(row[i], d0) : _mm256_setzero_ps();
      }
      transpose8(r);
      for (int i = 0; i < 8; ++i) _mm256_storeu_ps(kt + (d0 + i) * C + jb, r[i]);
    }
    for (int d = hd8; d < hd; ++d)
      for (int i = 0; i < 8; ++i) kt[d * C + jb + i] = i < nv ? load1<t>(row[i], d) : 0.0f;
  }
  for (int j = 0; j < nc; ++j) {
    const std::byte* row = kv.v + slice_offset(kv, cells[j]);
    float* vj = v + static_cast<std::size_t>(j) * hd;
    for (int d = 0; d < hd8; d += 8) _mm256_storeu_ps(vj + d, load8<t>(row, d));
    for (int d = hd8; d < hd; ++d) vj[d] = load1<t>(row, d);
  }
}

}  // namespace

void load_chunk(const KvHead& kv, const std::uint32_t* cells, int nc, int hd, float* kt, float* v) {
  switch (kv.type) {
    case KvType::F32:
      return load_chunk_t<KvType::F32>(kv, cells, nc, hd, kt, v);
    case KvType::F16:
      return load_chunk_t<KvType::F16>(kv, cells, nc, hd, kt, v);
    case KvType::Q8_0:
      return load_chunk_t<KvType::Q8_0>(kv, cells, nc, hd, kt, v);
  }
}

namespace {

// The 32 scores of NQ queries (q [NQ][hd]) against the chunk, unscaled, in
// decode_t's order: the lane of a cell in residue r sums the dimensions
// d = r mod 8 below hd8 in turn, the eight residue sums are added as hsum8
// adds a register's lanes, then the dimensions past hd8 one by one. Residues are
// taken in the tree's leaf order, so that only the partial sums it still
// needs stay live; each K^T row loaded serves all NQ queries (one query alone
// spends 5 loads on 4 FMAs, two spend 6 on 8).
template <int NQ>
void scores(const float* q, const float* kt, int hd, __m256 (*x)[4]) {
  static_assert(C == 32, "the score registers below hold 32 lanes");
  const int hd8 = hd & ~7;
  // Residue r's sums over the chunk's 4 groups of 8 cells.
  const auto residue = [&](int r, __m256(&out)[NQ][4]) {
    __m256 a[NQ][4];  // local, so that it stays in registers
    for (int h = 0; h < NQ; ++h)
      for (int g = 0; g < 4; ++g) a[h][g] = _mm256_setzero_ps();
    for (int d0 = 0; d0 < hd8; d0 += 8) {
      const float* kd = kt + (d0 + r) * C;
      __m256 k0 = _mm256_loadu_ps(kd), k1 = _mm256_loadu_ps(kd + 8);
      __m256 k2 = _mm256_loadu_ps(kd + 16), k3 = _mm256_loadu_ps(kd + 24);
      // Held in registers: folded into each FMA, the compiler would load them NQ times.
      if constexpr (NQ > 1) __asm__("" : "+x"(k0), "+x"(k1), "+x"(k2), "+x"(k3));
      for (int h = 0; h < NQ; ++h) {
        const __m256 qd = _mm256_broadcast_ss(q + h * hd + d0 + r);
        a[h][0] = _mm256_fmadd_ps(qd, k0, a[h][0]);
        a[h][1] = _mm256_fmadd_ps(qd, k1, a[h][1]);
        a[h][2] = _mm256_fmadd_ps(qd, k2, a[h][2]);
        a[h][3] = _mm256_fmadd_ps(qd, k3, a[h][3]);
      }
    }
    for (int h = 0; h < NQ; ++h)
      for (int g = 0; g < 4; ++g) out[h][g] = a[h][g];
  };
  // p_r + p_(r+4), the tree's first level.
  const auto pair = [&](int r, __m256(&s)[NQ][4]) {
    __m256 a[NQ][4], b[NQ][4];
    residue(r, a);
    residue(r + 4, b);
    for (int h = 0; h < NQ; ++h)
      for (int g = 0; g < 4; ++g) s[h][g] = _mm256_add_ps(a[h][g], b[h][g]);
  };
  __m256 s0[NQ][4], s1[NQ][4], w0[NQ][4];
  pair(0, s0);
  pair(2, s1);
  for (int h = 0; h < NQ; ++h)
    for (int g = 0; g < 4; ++g) w0[h][g] = _mm256_add_ps(s0[h][g], s1[h][g]);
  pair(1, s0);
  pair(3, s1);
  for (int h = 0; h < NQ; ++h)
    for (int g = 0; g < 4; ++g)
      x[h][g] = _mm256_add_ps(w0[h][g], _mm256_add_ps(s0[h][g], s1[h][g]));
  for (int d = hd8; d < hd; ++d)
    for (int h = 0; h < NQ; ++h)
      for (int g = 0; g < 4; ++g)
        x[h][g] = _mm256_fmadd_ps(_mm256_broadcast_ss(q + h * hd + d),
                                  _mm256_loadu_ps(kt + d * C + 8 * g), x[h][g]);
}

// query_chunk's online-softmax step for NQ queries from their raw scores x:
// each query's m, l and acc rescaled to its chunk maximum, the chunk's
// weights e^(s_j - m') in sc[h]. The queries go step by step side by side,
// so that one's reductions and exponentials fill the other's waits (one at a
// time, the step was a fifth of query_chunk's samples on Zen 4). Inlined, as
// the AVX-512 one (attention_avx512.cpp says why).
template <int NQ>
[[gnu::always_inline]] inline void fold_scores(__m256 (&x)[NQ][4], int jlo, int jhi, int hd,
                                               float scale, float softcap, float* m, float* l,
                                               float* acc, float (*sc)[C]) {
  const __m256 vs = _mm256_set1_ps(scale);
  for (int h = 0; h < NQ; ++h)
    for (int g = 0; g < 4; ++g) x[h][g] = _mm256_mul_ps(x[h][g], vs);
  // The cap through vec's, as decode_t: a row's bits do not depend on which ran.
  if (softcap > 0.0f)
    for (int h = 0; h < NQ; ++h) {
      for (int g = 0; g < 4; ++g) _mm256_store_ps(sc[h] + 8 * g, x[h][g]);
      vec::avx2::softcap(sc[h], C, softcap);
      for (int g = 0; g < 4; ++g) x[h][g] = _mm256_load_ps(sc[h] + 8 * g);
    }
  // Lanes outside [jlo, jhi) get -inf: weight 0 below, and no effect on the max.
  if (jlo > 0 || jhi < C) {
    const __m256 ninf = _mm256_set1_ps(-__builtin_inff());
    const __m256i lo = _mm256_set1_epi32(jlo - 1), hi = _mm256_set1_epi32(jhi);
    for (int g = 0; g < 4; ++g) {
      const __m256i j =
          _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(8 * g));
      const __m256 keep = _mm256_castsi256_ps(
          _mm256_and_si256(_mm256_cmpgt_epi32(j, lo), _mm256_cmpgt_epi32(hi, j)));
      for (int h = 0; h < NQ; ++h) x[h][g] = _mm256_blendv_ps(ninf, x[h][g], keep);
    }
  }
  float m_new[NQ];
  for (int h = 0; h < NQ; ++h) {
    const float mx =
        hmax8(_mm256_max_ps(_mm256_max_ps(x[h][0], x[h][1]), _mm256_max_ps(x[h][2], x[h][3])));
    m_new[h] = m[h] > mx ? m[h] : mx;
  }
  for (int h = 0; h < NQ; ++h) {
    if (m[h] == m_new[h]) continue;
    const float corr = exp_nonpositive(m[h] - m_new[h]);  // 0 when m was -inf
    l[h] *= corr;
    const __m256 vc = _mm256_set1_ps(corr);
    float* ah = acc + static_cast<std::size_t>(h) * hd;
    int d = 0;
    for (; d + 8 <= hd; d += 8)
      _mm256_storeu_ps(ah + d, _mm256_mul_ps(_mm256_loadu_ps(ah + d), vc));
    for (; d < hd; ++d) ah[d] *= corr;
    m[h] = m_new[h];
  }
  for (int h = 0; h < NQ; ++h) {
    const __m256 vm = _mm256_set1_ps(m_new[h]);
    for (int g = 0; g < 4; ++g) x[h][g] = exp8_nonpositive(_mm256_sub_ps(x[h][g], vm));
  }
  for (int h = 0; h < NQ; ++h) {
    l[h] += hsum8(_mm256_add_ps(_mm256_add_ps(x[h][0], x[h][1]), _mm256_add_ps(x[h][2], x[h][3])));
    for (int g = 0; g < 4; ++g) _mm256_store_ps(sc[h] + 8 * g, x[h][g]);
  }
}

// Columns [d0, d0 + 8 W) of add_values: W registers per query in flight
// while the chunk's V rows stream by, each V row read once for all NQ.
template <int NQ, int W>
void add_columns(const float (*sc)[C], const float* v, int jlo, int jhi, int hd, int d0,
                 float* acc) {
  __m256 a[NQ][W];
  for (int h = 0; h < NQ; ++h)
    for (int i = 0; i < W; ++i) a[h][i] = _mm256_loadu_ps(acc + h * hd + d0 + 8 * i);
  for (int j = jlo; j < jhi; ++j) {
    const float* vj = v + static_cast<std::size_t>(j) * hd + d0;
    __m256 vx[W];
    for (int i = 0; i < W; ++i) vx[i] = _mm256_loadu_ps(vj + 8 * i);
    // Held in registers, as scores' K^T rows: folded into each FMA, the V row
    // was loaded NQ times, and 10 loads to 8 FMAs left the loop waiting on
    // the load ports.
    if constexpr (NQ > 1)
      for (int i = 0; i < W; ++i) __asm__("" : "+x"(vx[i]));
    for (int h = 0; h < NQ; ++h) {
      const __m256 p = _mm256_broadcast_ss(sc[h] + j);
      for (int i = 0; i < W; ++i) a[h][i] = _mm256_fmadd_ps(p, vx[i], a[h][i]);
    }
  }
  for (int h = 0; h < NQ; ++h)
    for (int i = 0; i < W; ++i) _mm256_storeu_ps(acc + h * hd + d0 + 8 * i, a[h][i]);
}

// acc[h] += sum_j sc[h][j] v[j] for NQ queries, j in [jlo, jhi): 64 columns
// of a lone query's acc in registers over the chunk (8 chains of FMAs, as two
// queries' 2 x 4 give), then 32, then 8, then one. Each query's additions are
// its own, in j order.
template <int NQ>
void add_values(const float (*sc)[C], const float* v, int jlo, int jhi, int hd, float* acc) {
  int d0 = 0;
  if constexpr (NQ == 1)
    for (; d0 + 64 <= hd; d0 += 64) add_columns<NQ, 8>(sc, v, jlo, jhi, hd, d0, acc);
  for (; d0 + 32 <= hd; d0 += 32) add_columns<NQ, 4>(sc, v, jlo, jhi, hd, d0, acc);
  for (; d0 + 8 <= hd; d0 += 8) add_columns<NQ, 1>(sc, v, jlo, jhi, hd, d0, acc);
  for (; d0 < hd; ++d0)
    for (int h = 0; h < NQ; ++h) {
      float a = acc[h * hd + d0];
      for (int j = jlo; j < jhi; ++j)
        a = fmaf(sc[h][j], v[static_cast<std::size_t>(j) * hd + d0], a);
      acc[h * hd + d0] = a;
    }
}

}  // namespace

// Queries in pairs: add_values' accumulators, 2 x 4 registers of 8 columns,
// and a V row's 4 leave room in the 16 the level has; the scores' 2 x 4 and a
// K^T row's 4 likewise. A pair's scores come from one pass over the chunk's
// K^T, its values from one pass over V.
void query_chunk(const float* q, const float* kt, const float* v, int jlo, int jhi, int hd, int nq,
                 float scale, float softcap, float* m, float* l, float* acc) {
  for (int h0 = 0; h0 < nq; h0 += 2) {
    const int n = nq - h0 < 2 ? nq - h0 : 2;
    const float* qg = q + static_cast<std::size_t>(h0) * hd;
    float* ag = acc + static_cast<std::size_t>(h0) * hd;
    alignas(32) float sc[2][C];
    if (n == 2) {
      __m256 x[2][4];
      scores<2>(qg, kt, hd, x);
      fold_scores<2>(x, jlo, jhi, hd, scale, softcap, m + h0, l + h0, ag, sc);
      add_values<2>(sc, v, jlo, jhi, hd, ag);
    } else {
      __m256 x[1][4];
      scores<1>(qg, kt, hd, x);
      fold_scores<1>(x, jlo, jhi, hd, scale, softcap, m + h0, l + h0, ag, sc);
      add_values<1>(sc, v, jlo, jhi, hd, ag);
    }
  }
}

namespace {

// decode_chunk for NQ query heads of one cache type (attention_avx512.cpp has
// the same steps in 16 lanes).
// cells[0, n_ask) are the ones it may ask for ahead (none: 0).
template <KvType t, int NQ>
void decode_t(const KvHead& kv, const std::uint32_t* cells, int nc, int n_ask, int hd,
              const float* q, float scale, float softcap, float* m, float* l, float* acc) {
  alignas(32) float sc[NQ][C];       // [head][cell] scores, then weights
  alignas(32) float part[NQ][C][8];  // [head][cell] the score's 8 partial sums
  const std::byte* vrow[C];
  const int ahead = prefetch_distance(kv);
  const int hd8 = hd & ~7;
  // Scores: each K row is converted once, 8 elements at a time, and dotted
  // with every head's query; the partial sums of 8 cells added up at once,
  // then the dimensions past hd8 one at a time.
  for (int j = 0; j < nc; ++j) {
    if (j + ahead < n_ask) prefetch_cell(kv, cells[j + ahead]);
    const std::size_t at = slice_offset(kv, cells[j]);
    const std::byte* row = kv.k + at;
    vrow[j] = kv.v + at;
    __m256 s[NQ];
    for (int h = 0; h < NQ; ++h) s[h] = _mm256_setzero_ps();
    for (int d0 = 0; d0 < hd8; d0 += 8) {
      const __m256 kx = load8<t>(row, d0);
      for (int h = 0; h < NQ; ++h)
        s[h] = _mm256_fmadd_ps(_mm256_loadu_ps(q + h * hd + d0), kx, s[h]);
    }
    for (int h = 0; h < NQ; ++h) _mm256_store_ps(part[h][j], s[h]);
  }
  const int n8 = (nc + 7) & ~7;
  for (int j = nc; j < n8; ++j)
    for (int h = 0; h < NQ; ++h) _mm256_store_ps(part[h][j], _mm256_setzero_ps());
  for (int h = 0; h < NQ; ++h)
    for (int j0 = 0; j0 < n8; j0 += 8) _mm256_store_ps(sc[h] + j0, hsum8x8(part[h] + j0));
  if (hd8 < hd)
    for (int j = 0; j < nc; ++j) {
      const std::byte* row = kv.k + slice_offset(kv, cells[j]);
      for (int h = 0; h < NQ; ++h)
        for (int d = hd8; d < hd; ++d) sc[h][j] = fmaf(q[h * hd + d], load1<t>(row, d), sc[h][j]);
    }
  for (int h = 0; h < NQ; ++h) {
    float* sh = sc[h];
    for (int j = 0; j < nc; ++j) sh[j] *= scale;
    if (softcap > 0.0f) vec::avx2::softcap(sh, nc, softcap);
    for (int j = nc; j < C; ++j) sh[j] = -__builtin_inff();  // weight 0, no effect on the max
    __m256 x0 = _mm256_load_ps(sh), x1 = _mm256_load_ps(sh + 8);
    __m256 x2 = _mm256_load_ps(sh + 16), x3 = _mm256_load_ps(sh + 24);
    const float mx = hmax8(_mm256_max_ps(_mm256_max_ps(x0, x1), _mm256_max_ps(x2, x3)));
    const float m_new = m[h] > mx ? m[h] : mx;
    if (m[h] != m_new) {
      const float corr = exp_nonpositive(m[h] - m_new);  // 0 when m was -inf
      l[h] *= corr;
      const __m256 vc = _mm256_set1_ps(corr);
      float* ah = acc + h * hd;
      int d = 0;
      for (; d + 8 <= hd; d += 8)
        _mm256_storeu_ps(ah + d, _mm256_mul_ps(_mm256_loadu_ps(ah + d), vc));
      for (; d < hd; ++d) ah[d] *= corr;
      m[h] = m_new;
    }
    const __m256 vm = _mm256_set1_ps(m_new);
    x0 = exp8_nonpositive(_mm256_sub_ps(x0, vm));
    x1 = exp8_nonpositive(_mm256_sub_ps(x1, vm));
    x2 = exp8_nonpositive(_mm256_sub_ps(x2, vm));
    x3 = exp8_nonpositive(_mm256_sub_ps(x3, vm));
    l[h] += hsum8(_mm256_add_ps(_mm256_add_ps(x0, x1), _mm256_add_ps(x2, x3)));
    _mm256_store_ps(sh, x0);
    _mm256_store_ps(sh + 8, x1);
    _mm256_store_ps(sh + 16, x2);
    _mm256_store_ps(sh + 24, x3);
  }
  // acc[h] += sum_j p_hj v_j: 16 columns of every head's acc in registers
  // (4 heads x 2 of the 16 ymm registers' worth) while the V rows stream by.
  int d0 = 0;
  for (; d0 + 16 <= hd; d0 += 16) {
    __m256 a[NQ][2];
    for (int h = 0; h < NQ; ++h)
      for (int i = 0; i < 2; ++i) a[h][i] = _mm256_loadu_ps(acc + h * hd + d0 + 8 * i);
    for (int j = 0; j < nc; ++j) {
      const __m256 v0 = load8<t>(vrow[j], d0), v1 = load8<t>(vrow[j], d0 + 8);
      for (int h = 0; h < NQ; ++h) {
        const __m256 p = _mm256_broadcast_ss(&sc[h][j]);
        a[h][0] = _mm256_fmadd_ps(p, v0, a[h][0]);
        a[h][1] = _mm256_fmadd_ps(p, v1, a[h][1]);
      }
    }
    for (int h = 0; h < NQ; ++h)
      for (int i = 0; i < 2; ++i) _mm256_storeu_ps(acc + h * hd + d0 + 8 * i, a[h][i]);
  }
  for (; d0 + 8 <= hd; d0 += 8) {
    __m256 a[NQ];
    for (int h = 0; h < NQ; ++h) a[h] = _mm256_loadu_ps(acc + h * hd + d0);
    for (int j = 0; j < nc; ++j) {
      const __m256 vx = load8<t>(vrow[j], d0);
      for (int h = 0; h < NQ; ++h) a[h] = _mm256_fmadd_ps(_mm256_broadcast_ss(&sc[h][j]), vx, a[h]);
    }
    for (int h = 0; h < NQ; ++h) _mm256_storeu_ps(acc + h * hd + d0, a[h]);
  }
  for (; d0 < hd; ++d0)
    for (int j = 0; j < nc; ++j) {
      const float x = load1<t>(vrow[j], d0);
      for (int h = 0; h < NQ; ++h) acc[h * hd + d0] = fmaf(sc[h][j], x, acc[h * hd + d0]);
    }
}

// Heads in groups of at most 4 (the V step's registers); a K or V row is
// converted again per group, from L1.
template <KvType t>
void decode_type(const KvHead& kv, const std::uint32_t* cells, int nc, int n_next, int hd, int nq,
                 const float* q, float scale, float softcap, float* m, float* l, float* acc) {
  for (int h0 = 0; h0 < nq; h0 += 4) {
    const int n = nq - h0 < 4 ? nq - h0 : 4;
    const std::size_t off = static_cast<std::size_t>(h0) * hd;
    const int n_ask = h0 == 0 ? nc + n_next : 0;  // later groups find the lines asked for
    switch (n) {
      case 1:
        decode_t<t, 1>(kv, cells, nc, n_ask, hd, q + off, scale, softcap, m + h0, l + h0,
                       acc + off);
        break;
      case 2:
        decode_t<t, 2>(kv, cells, nc, n_ask, hd, q + off, scale, softcap, m + h0, l + h0,
                       acc + off);
        break;
      case 3:
        decode_t<t, 3>(kv, cells, nc, n_ask, hd, q + off, scale, softcap, m + h0, l + h0,
                       acc + off);
        break;
      default:
        decode_t<t, 4>(kv, cells, nc, n_ask, hd, q + off, scale, softcap, m + h0, l + h0,
                       acc + off);
        break;
    }
  }
}

}  // namespace

void decode_chunk(const KvHead& kv, const std::uint32_t* cells, int nc, int n_next, int hd, int nq,
                  const float* q, float scale, float softcap, float* m, float* l, float* acc) {
  switch (kv.type) {
    case KvType::F32:
      return decode_type<KvType::F32>(kv, cells, nc, n_next, hd, nq, q, scale, softcap, m, l, acc);
    case KvType::F16:
      return decode_type<KvType::F16>(kv, cells, nc, n_next, hd, nq, q, scale, softcap, m, l, acc);
    case KvType::Q8_0:
      return decode_type<KvType::Q8_0>(kv, cells, nc, n_next, hd, nq, q, scale, softcap, m, l, acc);
  }
}

}  // namespace seam::attn::avx2
