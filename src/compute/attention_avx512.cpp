// AVX-512 attention steps (attention_kernels.h): query_chunk in 16-lane
// registers, the chunk's 32 scores in two, up to four queries' scores and
// values at once; decode_chunk with the query heads of a kv head in registers
// side by side. load_chunk stays the AVX2 one (converting and transposing K
// is not where the time goes). Compiled with the AVX-512 flags; see dot.h on
// keeping this unit's code out of baseline callers (intrinsics and plain loops
// only).
// GCC 12's AVX-512 headers self-initialize their "undefined" vectors
// (__m512 __Y = __Y), which -Wuninitialized reports once inlined here.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "compute/attention_kernels.h"
#include "compute/exp_avx512.h"

namespace seam::attn::avx512 {

namespace {

constexpr int C = kAttnChunk;

// Lanes [lo, hi) of 16 as a mask (lo, hi in [0, 16]).
inline __mmask16 lanes(int lo, int hi) {
  const std::uint32_t upto_hi = (1u << hi) - 1u, below_lo = (1u << lo) - 1u;
  return static_cast<__mmask16>(upto_hi & ~below_lo);
}

inline int clamp16(int x) { return x < 0 ? 0 : (x > 16 ? 16 : x); }

// The sum of a register's 16 lanes in a fixed order (lane i with i + 8, then
// + 4, + 2, + 1), written out so that decode_t and query_chunk add alike
// whatever the compiler's _mm512_reduce_add_ps does.
inline float sum16(__m512 x) {
  const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1));
  const __m256 a = _mm256_add_ps(_mm512_castps512_ps256(x), hi);
  const __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  const __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
  return _mm_cvtss_f32(_mm_add_ss(c, _mm_movehdup_ps(c)));
}

// The sixteen sums sum16(x[c]), c < 16, as one register (lane c), by the same
// additions: the registers are folded in pairs, each step adding one level of
// sum16's tree for two of them at once (lane i + i + 8, then + 4, + 2, + 1),
// 45 operations where sixteen sum16 and their stores spend 144. The last step
// leaves the sum of the register taken in position 4e + k in lane 4k + e, so
// position i takes register kOrder[i] = 4 (i % 4) + i / 4.
inline __m512 sum16x16(const float (*x)[16]) {
  constexpr int kOrder[16] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};
  __m512 a[8];  // pairs: lanes 0-7 position 2p's i + (i + 8), lanes 8-15 2p + 1's
  for (int p = 0; p < 8; ++p) {
    const __m512 u = _mm512_load_ps(x[kOrder[2 * p]]), v = _mm512_load_ps(x[kOrder[2 * p + 1]]);
    a[p] = _mm512_add_ps(_mm512_shuffle_f32x4(u, v, 0x44), _mm512_shuffle_f32x4(u, v, 0xEE));
  }
  __m512 b[4];  // 128-bit lane k: the (+ 4) level of position 4q + k's sum
  for (int q = 0; q < 4; ++q)
    b[q] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * q], a[2 * q + 1], 0x88),
                         _mm512_shuffle_f32x4(a[2 * q], a[2 * q + 1], 0xDD));
  __m512 c[2];  // (+ 2): per 128-bit lane, two lanes of each of two positions
  for (int r = 0; r < 2; ++r) {
    const __m512d u = _mm512_castps_pd(b[2 * r]), v = _mm512_castps_pd(b[2 * r + 1]);
    c[r] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(u, v)),
                         _mm512_castpd_ps(_mm512_unpackhi_pd(u, v)));
  }
  return _mm512_add_ps(_mm512_shuffle_ps(c[0], c[1], 0x88), _mm512_shuffle_ps(c[0], c[1], 0xDD));
}

// Elements [d, d + 16) of one kv head's row at `row`, lanes outside k zero
// (Q8_0: d is a multiple of 16 and hd of 32, so all 16 lie in one block).
template <KvType t>
inline __m512 load16(const std::byte* row, int d, __mmask16 k) {
  if constexpr (t == KvType::F32) {
    return _mm512_maskz_loadu_ps(k, reinterpret_cast<const float*>(row) + d);
  } else if constexpr (t == KvType::F16) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, row + 2 * d));
  } else {
    const std::byte* blk = row + (d / 32) * 34;  // BlockQ8_0: F16 scale, 32 int8
    std::uint16_t h;
    std::memcpy(&h, blk, 2);
    const __m128i q8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2 + d % 32));
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q8)),
                         _mm512_set1_ps(_cvtsh_ss(h)));
  }
}

// decode_chunk for NQ query heads of one cache type.
// cells[0, n_ask) are the ones it may ask for ahead (none: 0).
template <KvType t, int NQ>
void decode_t(const KvHead& kv, const std::uint32_t* cells, int nc, int n_ask, int hd,
              const float* q, float scale, float softcap, float* m, float* l, float* acc) {
  alignas(64) float sc[NQ][C];        // [head][cell] scores, then weights
  alignas(64) float part[NQ][C][16];  // [head][cell] the score's 16 partial sums
  const std::byte* vrow[C];
  const int ahead = prefetch_distance(kv);
  const int hd16 = hd & ~15;
  const __mmask16 tail = lanes(0, hd - hd16);
  // Scores: each K row is converted once, 16 elements at a time, and dotted
  // with every head's query; the partial sums of 16 cells added up at once.
  for (int j = 0; j < nc; ++j) {
    if (j + ahead < n_ask) prefetch_cell(kv, cells[j + ahead]);
    const std::size_t at = slice_offset(kv, cells[j]);
    const std::byte* row = kv.k + at;
    vrow[j] = kv.v + at;
    __m512 s[NQ];
    for (int h = 0; h < NQ; ++h) s[h] = _mm512_setzero_ps();
    int d0 = 0;
    for (; d0 < hd16; d0 += 16) {
      const __m512 kx = load16<t>(row, d0, 0xFFFF);
      for (int h = 0; h < NQ; ++h)
        s[h] = _mm512_fmadd_ps(_mm512_loadu_ps(q + h * hd + d0), kx, s[h]);
    }
    if (d0 < hd) {
      const __m512 kx = load16<t>(row, d0, tail);
      for (int h = 0; h < NQ; ++h)
        s[h] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, q + h * hd + d0), kx, s[h]);
    }
    for (int h = 0; h < NQ; ++h) _mm512_store_ps(part[h][j], s[h]);
  }
  const int n16 = (nc + 15) & ~15;
  for (int j = nc; j < n16; ++j)
    for (int h = 0; h < NQ; ++h) _mm512_store_ps(part[h][j], _mm512_setzero_ps());
  for (int h = 0; h < NQ; ++h)
    for (int j0 = 0; j0 < n16; j0 += 16) _mm512_store_ps(sc[h] + j0, sum16x16(part[h] + j0));
  // Online softmax per head, as query_chunk; cells >= nc get -inf (weight 0).
  const __mmask16 k0 = lanes(0, clamp16(nc)), k1 = lanes(0, clamp16(nc - 16));
  const __m512 vs = _mm512_set1_ps(scale), ninf = _mm512_set1_ps(-__builtin_inff());
  for (int h = 0; h < NQ; ++h) {
    __m512 x0 = _mm512_mul_ps(_mm512_maskz_loadu_ps(k0, sc[h]), vs);
    __m512 x1 = _mm512_mul_ps(_mm512_maskz_loadu_ps(k1, sc[h] + 16), vs);
    if (softcap > 0.0f) {
      x0 = softcap16(x0, softcap);
      x1 = softcap16(x1, softcap);
    }
    x0 = _mm512_mask_blend_ps(k0, ninf, x0);
    x1 = _mm512_mask_blend_ps(k1, ninf, x1);
    const float mx = _mm512_reduce_max_ps(_mm512_max_ps(x0, x1));
    const float m_new = m[h] > mx ? m[h] : mx;
    if (m[h] != m_new) {
      const float corr = exp_nonpositive(m[h] - m_new);  // 0 when m was -inf
      l[h] *= corr;
      const __m512 vc = _mm512_set1_ps(corr);
      float* ah = acc + h * hd;
      for (int d0 = 0; d0 < hd; d0 += 16) {
        const __mmask16 k = lanes(0, clamp16(hd - d0));
        _mm512_mask_storeu_ps(ah + d0, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, ah + d0), vc));
      }
      m[h] = m_new;
    }
    const __m512 vm = _mm512_set1_ps(m_new);
    x0 = exp16_nonpositive(_mm512_sub_ps(x0, vm));
    x1 = exp16_nonpositive(_mm512_sub_ps(x1, vm));
    l[h] += sum16(_mm512_add_ps(x0, x1));
    _mm512_store_ps(sc[h], x0);
    _mm512_store_ps(sc[h] + 16, x1);
  }
  // acc[h] += sum_j p_hj v_j: 64 columns of every head's acc in registers while
  // the chunk's V rows stream by, each converted once.
  int d0 = 0;
  for (; d0 + 64 <= hd; d0 += 64) {
    __m512 a[NQ][4];
    for (int h = 0; h < NQ; ++h)
      for (int i = 0; i < 4; ++i) a[h][i] = _mm512_loadu_ps(acc + h * hd + d0 + 16 * i);
    for (int j = 0; j < nc; ++j) {
      __m512 vx[4];
      for (int i = 0; i < 4; ++i) vx[i] = load16<t>(vrow[j], d0 + 16 * i, 0xFFFF);
      for (int h = 0; h < NQ; ++h) {
        const __m512 p = _mm512_set1_ps(sc[h][j]);
        for (int i = 0; i < 4; ++i) a[h][i] = _mm512_fmadd_ps(p, vx[i], a[h][i]);
      }
    }
    for (int h = 0; h < NQ; ++h)
      for (int i = 0; i < 4; ++i) _mm512_storeu_ps(acc + h * hd + d0 + 16 * i, a[h][i]);
  }
  for (; d0 < hd; d0 += 16) {
    const __mmask16 k = lanes(0, clamp16(hd - d0));
    __m512 a[NQ];
    for (int h = 0; h < NQ; ++h) a[h] = _mm512_maskz_loadu_ps(k, acc + h * hd + d0);
    for (int j = 0; j < nc; ++j) {
      const __m512 vx = load16<t>(vrow[j], d0, k);
      for (int h = 0; h < NQ; ++h) a[h] = _mm512_fmadd_ps(_mm512_set1_ps(sc[h][j]), vx, a[h]);
    }
    for (int h = 0; h < NQ; ++h) _mm512_mask_storeu_ps(acc + h * hd + d0, k, a[h]);
  }
}

// Heads in groups of at most 4 (the V step's registers: 4 heads x 4 x 16
// columns); a K or V row is converted again per group, from L1.
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

// The 32 scores of NQ queries (q [NQ][hd]) against the chunk, unscaled, in
// decode_t's order: the lane of a cell in residue r sums the dimensions
// d = r mod 16 in turn (past hd, + 0 as decode_t's masked lanes add), and the
// sixteen residue sums are added in sum16's tree ((r + 8), then + 4, + 2,
// + 1). Residues are taken in the tree's leaf order, so that only the partial
// sums the tree still needs stay live; each K^T row loaded serves all NQ
// queries (one query alone spends 3 loads on 2 FMAs, two spend 4 on 4).
template <int NQ>
void scores(const float* q, const float* kt, int hd, __m512 (*x)[2]) {
  static_assert(C == 32, "the score registers below hold 32 lanes");
  // Residues summed at once: their accumulators, NQ x 2 groups each, and the
  // tree's pending sums must fit the 32 registers.
  constexpr int RS = NQ <= 2 ? 4 : 2;
  constexpr int kLeaf[4] = {0, 8, 4, 12};  // (r + 8) + ((r + 4) + (r + 12)) order, r < 4
  const int hd16 = hd & ~15, tail = hd - hd16;
  const __m512 zero = _mm512_setzero_ps();
  // u(r) = (p_r + p_(r+8)) + (p_(r+4) + p_(r+12)), the tree's second level.
  const auto leaf = [&](int r, __m512(&u)[NQ][2]) {
    __m512 pair[2][NQ][2];
    for (int s0 = 0; s0 < 4; s0 += RS) {
      __m512 a[RS][NQ][2];
      for (int i = 0; i < RS; ++i)
        for (int h = 0; h < NQ; ++h) a[i][h][0] = a[i][h][1] = zero;
      for (int d0 = 0; d0 < hd16; d0 += 16)
        for (int i = 0; i < RS; ++i) {
          const int d = d0 + r + kLeaf[s0 + i];
          __m512 k0 = _mm512_loadu_ps(kt + d * C), k1 = _mm512_loadu_ps(kt + d * C + 16);
          // Held in registers: folded into each FMA, the compiler would load them NQ times.
          if constexpr (NQ > 1) __asm__("" : "+v"(k0), "+v"(k1));
          for (int h = 0; h < NQ; ++h) {
            const __m512 qd = _mm512_set1_ps(q[h * hd + d]);
            a[i][h][0] = _mm512_fmadd_ps(qd, k0, a[i][h][0]);
            a[i][h][1] = _mm512_fmadd_ps(qd, k1, a[i][h][1]);
          }
        }
      if (tail != 0)
        for (int i = 0; i < RS; ++i) {
          const int rr = r + kLeaf[s0 + i], d = hd16 + rr;
          for (int h = 0; h < NQ; ++h)
            for (int g = 0; g < 2; ++g)
              a[i][h][g] = rr < tail
                               ? _mm512_fmadd_ps(_mm512_set1_ps(q[h * hd + d]),
                                                 _mm512_loadu_ps(kt + d * C + 16 * g), a[i][h][g])
                               : _mm512_add_ps(a[i][h][g], zero);
        }
      for (int i = 0; i < RS; i += 2)
        for (int h = 0; h < NQ; ++h)
          for (int g = 0; g < 2; ++g)
            pair[(s0 + i) / 2][h][g] = _mm512_add_ps(a[i][h][g], a[i + 1][h][g]);
    }
    for (int h = 0; h < NQ; ++h)
      for (int g = 0; g < 2; ++g) u[h][g] = _mm512_add_ps(pair[0][h][g], pair[1][h][g]);
  };
  __m512 u0[NQ][2], u1[NQ][2], w0[NQ][2];
  leaf(0, u0);
  leaf(2, u1);
  for (int h = 0; h < NQ; ++h)
    for (int g = 0; g < 2; ++g) w0[h][g] = _mm512_add_ps(u0[h][g], u1[h][g]);
  leaf(1, u0);
  leaf(3, u1);
  for (int h = 0; h < NQ; ++h)
    for (int g = 0; g < 2; ++g)
      x[h][g] = _mm512_add_ps(w0[h][g], _mm512_add_ps(u0[h][g], u1[h][g]));
}

// query_chunk's online-softmax step for NQ queries from their raw scores x:
// each query's m, l and acc rescaled to its chunk maximum, the chunk's
// weights e^(s_j - m') in sc[h]. The queries go step by step side by side, so
// that one's reductions and exponentials fill the others' waits. Inlined:
// GCC otherwise calls it out of line, the scores go through memory, and it
// took 11% of a 1B prefill at depth 4096.
template <int NQ>
[[gnu::always_inline]] inline void fold_scores(__m512 (*x)[2], int jlo, int jhi, int hd,
                                               float scale, float softcap, float* m, float* l,
                                               float* acc, float (*sc)[C]) {
  const __m512 vs = _mm512_set1_ps(scale);
  // Lanes outside [jlo, jhi) get -inf: weight 0 below, and no effect on the max.
  const __m512 ninf = _mm512_set1_ps(-__builtin_inff());
  const __mmask16 k0 = lanes(clamp16(jlo), clamp16(jhi));
  const __mmask16 k1 = lanes(clamp16(jlo - 16), clamp16(jhi - 16));
  for (int h = 0; h < NQ; ++h) {
    x[h][0] = _mm512_mul_ps(x[h][0], vs);
    x[h][1] = _mm512_mul_ps(x[h][1], vs);
    if (softcap > 0.0f) {
      x[h][0] = softcap16(x[h][0], softcap);
      x[h][1] = softcap16(x[h][1], softcap);
    }
    x[h][0] = _mm512_mask_blend_ps(k0, ninf, x[h][0]);
    x[h][1] = _mm512_mask_blend_ps(k1, ninf, x[h][1]);
  }
  float m_new[NQ];
  for (int h = 0; h < NQ; ++h) {
    const float mx = _mm512_reduce_max_ps(_mm512_max_ps(x[h][0], x[h][1]));
    m_new[h] = m[h] > mx ? m[h] : mx;
  }
  for (int h = 0; h < NQ; ++h) {
    if (m[h] == m_new[h]) continue;
    const float corr = exp_nonpositive(m[h] - m_new[h]);  // 0 when m was -inf
    l[h] *= corr;
    const __m512 vc = _mm512_set1_ps(corr);
    float* ah = acc + static_cast<std::size_t>(h) * hd;
    for (int d0 = 0; d0 < hd; d0 += 16) {
      const __mmask16 k = lanes(0, clamp16(hd - d0));
      _mm512_mask_storeu_ps(ah + d0, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, ah + d0), vc));
    }
    m[h] = m_new[h];
  }
  for (int h = 0; h < NQ; ++h) {
    const __m512 vm = _mm512_set1_ps(m_new[h]);
    x[h][0] = exp16_nonpositive(_mm512_sub_ps(x[h][0], vm));
    x[h][1] = exp16_nonpositive(_mm512_sub_ps(x[h][1], vm));
  }
  for (int h = 0; h < NQ; ++h) {
    l[h] += sum16(_mm512_add_ps(x[h][0], x[h][1]));
    _mm512_store_ps(sc[h], x[h][0]);
    _mm512_store_ps(sc[h] + 16, x[h][1]);
  }
}

// acc[h] += sum_j sc[h][j] v[j] for NQ queries, j in [jlo, jhi): 64 columns of
// every query's acc in registers while the chunk's V rows stream by, as
// decode_t's V step. Each query's additions are its own, in j order: several
// give the FMA units independent chains (one alone waits on its four) and
// read each V row once.
template <int NQ>
void add_values(const float (*sc)[C], const float* v, int jlo, int jhi, int hd, float* acc) {
  int d0 = 0;
  for (; d0 + 64 <= hd; d0 += 64) {
    __m512 a[NQ][4];
    for (int h = 0; h < NQ; ++h)
      for (int i = 0; i < 4; ++i) a[h][i] = _mm512_loadu_ps(acc + h * hd + d0 + 16 * i);
    for (int j = jlo; j < jhi; ++j) {
      const float* vj = v + static_cast<std::size_t>(j) * hd + d0;
      __m512 vx[4];
      for (int i = 0; i < 4; ++i) vx[i] = _mm512_loadu_ps(vj + 16 * i);
      for (int h = 0; h < NQ; ++h) {
        const __m512 p = _mm512_set1_ps(sc[h][j]);
        for (int i = 0; i < 4; ++i) a[h][i] = _mm512_fmadd_ps(p, vx[i], a[h][i]);
      }
    }
    for (int h = 0; h < NQ; ++h)
      for (int i = 0; i < 4; ++i) _mm512_storeu_ps(acc + h * hd + d0 + 16 * i, a[h][i]);
  }
  for (; d0 < hd; d0 += 16) {
    const __mmask16 k = lanes(0, clamp16(hd - d0));
    __m512 a[NQ];
    for (int h = 0; h < NQ; ++h) a[h] = _mm512_maskz_loadu_ps(k, acc + h * hd + d0);
    for (int j = jlo; j < jhi; ++j) {
      const __m512 vx = _mm512_maskz_loadu_ps(k, v + static_cast<std::size_t>(j) * hd + d0);
      for (int h = 0; h < NQ; ++h) a[h] = _mm512_fmadd_ps(_mm512_set1_ps(sc[h][j]), vx, a[h]);
    }
    for (int h = 0; h < NQ; ++h) _mm512_mask_storeu_ps(acc + h * hd + d0, k, a[h]);
  }
}

}  // namespace

// Queries in groups of at most 4: add_values' registers (4 x 4 x 16 columns)
// and the scores' (4 x 2 x 2 accumulators). A group's scores come from one
// pass over the chunk's K^T, its values from one pass over V. The three steps
// stay in this one function, dispatched on the group size for each: as one
// template per size GCC laid them out slower (1B Q4_K_M pp512 after 4,096
// cells, 1 thread: 111-118 against 132 tok/s).
void query_chunk(const float* q, const float* kt, const float* v, int jlo, int jhi, int hd, int nq,
                 float scale, float softcap, float* m, float* l, float* acc) {
  for (int h0 = 0; h0 < nq; h0 += 4) {
    const int n = nq - h0 < 4 ? nq - h0 : 4;
    const float* qg = q + static_cast<std::size_t>(h0) * hd;
    float* ag = acc + static_cast<std::size_t>(h0) * hd;
    __m512 x[4][2];
    alignas(64) float sc[4][C];
    switch (n) {
      case 1:
        scores<1>(qg, kt, hd, x);
        break;
      case 2:
        scores<2>(qg, kt, hd, x);
        break;
      case 3:
        scores<3>(qg, kt, hd, x);
        break;
      default:
        scores<4>(qg, kt, hd, x);
        break;
    }
    switch (n) {
      case 1:
        fold_scores<1>(x, jlo, jhi, hd, scale, softcap, m + h0, l + h0, ag, sc);
        break;
      case 2:
        fold_scores<2>(x, jlo, jhi, hd, scale, softcap, m + h0, l + h0, ag, sc);
        break;
      case 3:
        fold_scores<3>(x, jlo, jhi, hd, scale, softcap, m + h0, l + h0, ag, sc);
        break;
      default:
        fold_scores<4>(x, jlo, jhi, hd, scale, softcap, m + h0, l + h0, ag, sc);
        break;
    }
    switch (n) {
      case 1:
        add_values<1>(sc, v, jlo, jhi, hd, ag);
        break;
      case 2:
        add_values<2>(sc, v, jlo, jhi, hd, ag);
        break;
      case 3:
        add_values<3>(sc, v, jlo, jhi, hd, ag);
        break;
      default:
        add_values<4>(sc, v, jlo, jhi, hd, ag);
        break;
    }
  }
}

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

}  // namespace seam::attn::avx512
