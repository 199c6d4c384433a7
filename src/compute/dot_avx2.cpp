// AVX2 (+FMA, F16C) dot kernels. Each weight block is unpacked into registers
// once and multiplied against up to 4 activation rows (NT), so prefill
// reads every weight byte once per tile. Integer parts match the scalar
// reference exactly; only the f32 accumulation order differs.
// Compiled with -mavx2 -mfma -mf16c (CMakeLists.txt); see dot.h on keeping
// this unit's code out of baseline callers.
#include <immintrin.h>
#include <math.h>

#include <cstring>

#include "compute/dot.h"
#include "compute/dot_tile.h"
#include "compute/prefetch.h"
#include "compute/quant_blocks.h"
#include "compute/reduce_avx2.h"

namespace seam::dot::avx2 {
namespace {

using namespace seam::quant;

inline float h2f(std::uint16_t h) { return _cvtsh_ss(h); }

inline float hsum128(__m128 s) {
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Four fp16 values (block scales) as the four f32 lanes of one vector.
inline __m128 half4(std::uint16_t a, std::uint16_t b, std::uint16_t c, std::uint16_t d) {
  return _mm_cvtph_ps(_mm_setr_epi16(static_cast<short>(a), static_cast<short>(b),
                                     static_cast<short>(c), static_cast<short>(d), 0, 0, 0, 0));
}

// [sum a, sum b, sum c, sum d] of four int32 vectors' lanes: exact.
inline __m128i isum4(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i x = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
  return _mm_add_epi32(_mm256_castsi256_si128(x), _mm256_extracti128_si256(x, 1));
}

// 8 int32 sums of adjacent products of signed bytes x*y. maddubs wants an
// unsigned left operand, so move x's sign onto y: |x| * (y * sign(x)).
inline __m256i dot_i8(__m256i x, __m256i y) {
  const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
  return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

template <class Block>
inline const Block* act_row(const void* act, std::size_t stride, int t) {
  return reinterpret_cast<const Block*>(static_cast<const std::byte*>(act) + t * stride);
}

// ---------------------------------------------------------------- float weights

// Loads 8 weights as f32.
struct LoadF32 {
  static constexpr std::size_t kBytes = 4;
  static __m256 load(const void* w, std::int64_t k) {
    return _mm256_loadu_ps(static_cast<const float*>(w) + k);
  }
  static float one(const void* w, std::int64_t k) { return static_cast<const float*>(w)[k]; }
};
struct LoadF16 {
  static constexpr std::size_t kBytes = 2;
  static __m256 load(const void* w, std::int64_t k) {
    return _mm256_cvtph_ps(_mm_loadu_si128(
        reinterpret_cast<const __m128i*>(static_cast<const std::uint16_t*>(w) + k)));
  }
  static float one(const void* w, std::int64_t k) {
    return h2f(static_cast<const std::uint16_t*>(w)[k]);
  }
};
struct LoadBF16 {
  static constexpr std::size_t kBytes = 2;
  static __m256 load(const void* w, std::int64_t k) {
    const __m128i h =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const std::uint16_t*>(w) + k));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static float one(const void* w, std::int64_t k) {
    const std::uint32_t b = static_cast<std::uint32_t>(static_cast<const std::uint16_t*>(w)[k])
                            << 16;
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }
};

// R rows (row_stride bytes apart) against NT tokens: two independent
// accumulators per row-token pair hide the FMA latency in decode, in the same
// order whatever R and NT (a row is the same bits in any tile). Tokens share
// each weight load (float_dot), rows each activation load (short_rows_*). The
// float GEMM (gemm_avx2.cpp) adds in this order too: keep them in step.
template <class L, int R, int NT>
void float_block(std::int64_t n, const void* w, std::size_t row_stride, const void* act,
                 std::size_t as, float* out, std::size_t os) {
  const char* rows[R];
  const float* a[NT];
  __m256 acc0[R][NT], acc1[R][NT];
  for (int r = 0; r < R; ++r) rows[r] = static_cast<const char*>(w) + r * row_stride;
  for (int t = 0; t < NT; ++t) a[t] = act_row<float>(act, as, t);
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < NT; ++t) acc0[r][t] = acc1[r][t] = _mm256_setzero_ps();
  std::int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    for (int r = 0; r < R; ++r) {
      prefetch_ahead<kPrefetchAheadAvx2>(rows[r] + k * L::kBytes, 16 * L::kBytes);
      const __m256 w0 = L::load(rows[r], k), w1 = L::load(rows[r], k + 8);
      for (int t = 0; t < NT; ++t) {
        acc0[r][t] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(a[t] + k), acc0[r][t]);
        acc1[r][t] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(a[t] + k + 8), acc1[r][t]);
      }
    }
  }
  for (; k + 8 <= n; k += 8) {
    for (int r = 0; r < R; ++r) {
      const __m256 w0 = L::load(rows[r], k);
      for (int t = 0; t < NT; ++t)
        acc0[r][t] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(a[t] + k), acc0[r][t]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < NT; ++t) {
      float s = hsum8(_mm256_add_ps(acc0[r][t], acc1[r][t]));
      for (std::int64_t j = k; j < n; ++j) s = fmaf(L::one(rows[r], j), a[t][j], s);
      out[t * os + r] = s;
    }
  }
}

template <class L, int NT>
void float_dot(std::int64_t n, const void* w, const void* act, std::size_t as, float* out,
               std::size_t os) {
  float_block<L, 1, NT>(n, w, 0, act, as, out, os);
}

// ---------------------------------------------------------------- Q4_0, Q8_0

// 32 signed weights of a Q4_0 block: low nibbles are elements 0..15, high 16..31.
inline __m256i unpack_q4_0(const BlockQ4_0& b) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
  const __m128i m = _mm_set1_epi8(0x0F);
  const __m256i v = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m), _mm_and_si128(q, m));
  return _mm256_sub_epi8(v, _mm256_set1_epi8(8));
}

inline __m256i unpack_q8_0(const BlockQ8_0& b) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
}

// The 32-element block types add as the AVX2 GEMM does (gemm_avx2.cpp tile),
// so a (row, token) is the same bits from the row kernels and the GEMM: the
// block's integer dot product exactly, then acc = fma(float(isum), dw * da,
// acc), one chain over the blocks. Four chains (tokens, or rows) share a
// vector; isum4 reduces their int32 lanes.
template <class WBlock>
inline float block_d(const WBlock& b) {
  return h2f(b.d);
}

template <class WBlock, __m256i (*Unpack)(const WBlock&), int NT,
          float (*Scale)(const WBlock&) = block_d<WBlock>>
void q_x_q8_0(std::int64_t n, const void* w, const void* act, std::size_t as, float* out,
              std::size_t os) {
  static_assert(NT <= 4, "one 4-lane chain vector");
  const auto* x = static_cast<const WBlock*>(w);
  const std::int64_t nb = n / kQK8_0;
  const BlockQ8_0* y[4];
  for (int t = 0; t < 4; ++t) y[t] = act_row<BlockQ8_0>(act, as, t < NT ? t : 0);
  __m128 acc = _mm_setzero_ps();
  for (std::int64_t i = 0; i < nb; ++i) {
    if ((i & 3) == 0) prefetch_ahead<kPrefetchAheadAvx2>(x + i, 4 * sizeof(*x));
    const __m256i q = Unpack(x[i]);
    __m256i p[4];
    for (int t = 0; t < NT; ++t)
      p[t] = dot_i8(q, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[t][i].qs)));
    for (int t = NT; t < 4; ++t) p[t] = p[0];
    const __m128 da = half4(y[0][i].d, y[1][i].d, y[2][i].d, y[3][i].d);
    const __m128 s = _mm_mul_ps(_mm_set1_ps(Scale(x[i])), da);
    acc = _mm_fmadd_ps(_mm_cvtepi32_ps(isum4(p[0], p[1], p[2], p[3])), s, acc);
  }
  alignas(16) float sums[4];
  _mm_store_ps(sums, acc);
  for (int t = 0; t < NT; ++t) out[t * os] = sums[t];
}

// One token against kDecodeRows weight rows, row_stride bytes apart (decode's
// common case): q_x_q8_0's chains with the rows in the lanes, sharing each
// activation load.
template <class WBlock, __m256i (*Unpack)(const WBlock&)>
void q_x_q8_0_rows(std::int64_t n, const void* w, std::size_t row_stride, const void* act,
                   float* out) {
  constexpr int R = kDecodeRows;
  static_assert(R == 4, "isum4 reduces four rows");
  const WBlock* x[R];
  for (int r = 0; r < R; ++r)
    x[r] = reinterpret_cast<const WBlock*>(static_cast<const std::byte*>(w) + r * row_stride);
  const auto* y = static_cast<const BlockQ8_0*>(act);
  const std::int64_t nb = n / kQK8_0;
  __m128 acc = _mm_setzero_ps();
  for (std::int64_t i = 0; i < nb; ++i) {
    // The rows are read side by side: "ahead" is the same blocks R rows on.
    if ((i & 3) == 0)
      for (int r = 0; r < R; ++r)
        prefetch_ahead<kPrefetchAheadAvx2>(
            reinterpret_cast<const char*>(x[r] + i) + R * row_stride - kPrefetchAheadAvx2 / 2,
            4 * sizeof(WBlock));
    const __m256i yq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs));
    __m256i p[R];
    for (int r = 0; r < R; ++r) p[r] = dot_i8(Unpack(x[r][i]), yq);
    const __m128 dw = half4(x[0][i].d, x[1][i].d, x[2][i].d, x[3][i].d);
    const __m128 s = _mm_mul_ps(dw, _mm_set1_ps(h2f(y[i].d)));
    acc = _mm_fmadd_ps(_mm_cvtepi32_ps(isum4(p[0], p[1], p[2], p[3])), s, acc);
  }
  _mm_storeu_ps(out, acc);
}

// ---------------------------------------------------------------- Q4_1, Q5_0, Q5_1

// Byte j = 0xFF where bit j of the little-endian 32-bit word is set.
inline __m256i bits_to_bytes(const std::uint8_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  const __m256i shuf = _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101,
                                          0x0202020202020202, 0x0303030303030303);
  const __m256i x = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(v)), shuf);
  const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
  return _mm256_cmpeq_epi8(_mm256_and_si256(x, bit), bit);
}

// 32 unsigned nibbles: elements 0..15 in the low lane, 16..31 in the high lane.
inline __m256i nibbles(const std::uint8_t* qs) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i m = _mm_set1_epi8(0x0F);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m), _mm_and_si128(q, m));
}

inline __m256i unpack_q5_0(const BlockQ5_0& b) {
  const __m256i q =
      _mm256_or_si256(nibbles(b.qs), _mm256_and_si256(bits_to_bytes(b.qh), _mm256_set1_epi8(0x10)));
  return _mm256_sub_epi8(q, _mm256_set1_epi8(16));
}

// Unsigned weights (q in 0..31) against Q8_1: sum (q*d + m) * a = d*da*(q.y) + m*s.
inline __m256i unpack_q4_1(const BlockQ4_1& b) { return nibbles(b.qs); }
inline __m256i unpack_q5_1(const BlockQ5_1& b) {
  return _mm256_or_si256(nibbles(b.qs),
                         _mm256_and_si256(bits_to_bytes(b.qh), _mm256_set1_epi8(0x10)));
}

// Unsigned weights against Q8_1 in the GEMM's chain: acc = fma(float(q.y),
// dw * da, acc), then acc = fma(mw, s, acc) per block (s = da * sum(y)).
template <class WBlock, __m256i (*Unpack)(const WBlock&), int NT>
void q_x_q8_1(std::int64_t n, const void* w, const void* act, std::size_t as, float* out,
              std::size_t os) {
  static_assert(NT <= 4, "one 4-lane chain vector");
  const auto* x = static_cast<const WBlock*>(w);
  const std::int64_t nb = n / kQK8_1;
  const BlockQ8_1* y[4];
  for (int t = 0; t < 4; ++t) y[t] = act_row<BlockQ8_1>(act, as, t < NT ? t : 0);
  const __m256i ones = _mm256_set1_epi16(1);
  __m128 acc = _mm_setzero_ps();
  for (std::int64_t i = 0; i < nb; ++i) {
    if ((i & 3) == 0) prefetch_ahead<kPrefetchAheadAvx2>(x + i, 4 * sizeof(*x));
    const __m256i q = Unpack(x[i]);
    __m256i p[4];
    for (int t = 0; t < NT; ++t) {
      const __m256i yq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[t][i].qs));
      p[t] = _mm256_madd_epi16(_mm256_maddubs_epi16(q, yq), ones);
    }
    for (int t = NT; t < 4; ++t) p[t] = p[0];
    const __m128 da = half4(y[0][i].d, y[1][i].d, y[2][i].d, y[3][i].d);
    const __m128 sa = half4(y[0][i].s, y[1][i].s, y[2][i].s, y[3][i].s);
    const __m128 s = _mm_mul_ps(_mm_set1_ps(h2f(x[i].d)), da);
    acc = _mm_fmadd_ps(_mm_cvtepi32_ps(isum4(p[0], p[1], p[2], p[3])), s, acc);
    acc = _mm_fmadd_ps(_mm_set1_ps(h2f(x[i].m)), sa, acc);
  }
  alignas(16) float sums[4];
  _mm_store_ps(sums, acc);
  for (int t = 0; t < NT; ++t) out[t * os] = sums[t];
}

// ---------------------------------------------------------------- Q4_K, Q5_K

// For Q5_K, `qh` adds bit (2p) / (2p+1) of qh[l] as bit 4 of the low / high run.
template <class Block, bool kHigh, int NT>
void k4(std::int64_t n, const void* w, const void* act, std::size_t as, float* out,
        std::size_t os) {
  const auto* x = static_cast<const Block*>(w);
  const std::int64_t nb = n / kQK_K;
  const BlockQ8_K* y[NT];
  __m256 acc[NT];
  __m128 acc_m[NT];
  for (int t = 0; t < NT; ++t) {
    y[t] = act_row<BlockQ8_K>(act, as, t);
    acc[t] = _mm256_setzero_ps();
    acc_m[t] = _mm_setzero_ps();
  }
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i one = _mm256_set1_epi8(1);
  for (std::int64_t i = 0; i < nb; ++i) {
    prefetch_ahead<kPrefetchAheadAvx2>(x + i, sizeof(Block));
    // Unpack the 12-byte field into bytes 0..7 = scales, 8..15 = mins (scale_min_k4's
    // layout, done on 32-bit words instead of per sub-block).
    std::uint32_t u[4];
    std::memcpy(u, x[i].scales, 12);
    u[3] = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4);
    const std::uint32_t mins_lo = u[1] & 0x3f3f3f3fu;
    u[1] = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);
    u[2] = mins_lo;
    u[0] &= 0x3f3f3f3fu;
    // [8 scales][8 mins] as 16-bit words; each sub-block's scale is then one
    // byte shuffle of `scales` away, not a scalar extract and broadcast.
    const __m128i sm = _mm_set_epi32(static_cast<int>(u[3]), static_cast<int>(u[2]),
                                     static_cast<int>(u[1]), static_cast<int>(u[0]));
    const __m128i mins16 = _mm_cvtepu8_epi16(_mm_srli_si128(sm, 8));
    const __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
    __m256i hbits = _mm256_setzero_si256();
    if constexpr (kHigh) hbits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qh));
    __m256i sumi[NT];
    for (int t = 0; t < NT; ++t) sumi[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qs + 32 * p));
      __m256i lo = _mm256_and_si256(q, m4);                        // elements 64p + 0..31
      __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);  // 64p + 32..63
      if constexpr (kHigh) {
        // Per-byte bit extraction: a 16-bit shift by < 8 then a 0x01 byte mask.
        const __m256i b0 = _mm256_and_si256(_mm256_srli_epi16(hbits, 2 * p), one);
        const __m256i b1 = _mm256_and_si256(_mm256_srli_epi16(hbits, 2 * p + 1), one);
        lo = _mm256_or_si256(lo, _mm256_slli_epi16(b0, 4));
        hi = _mm256_or_si256(hi, _mm256_slli_epi16(b1, 4));
      }
      // Word j of `scales` in every lane: the byte pair (2j, 2j + 1) repeated.
      const __m256i s_lo = _mm256_shuffle_epi8(scales, _mm256_set1_epi16(0x0100 + 0x0404 * p));
      const __m256i s_hi = _mm256_shuffle_epi8(scales, _mm256_set1_epi16(0x0302 + 0x0404 * p));
      for (int t = 0; t < NT; ++t) {
        const __m256i y_lo =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[t][i].qs + 64 * p));
        const __m256i y_hi =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[t][i].qs + 64 * p + 32));
        const __m256i a = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, y_lo), s_lo);
        const __m256i b = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, y_hi), s_hi);
        sumi[t] = _mm256_add_epi32(sumi[t], _mm256_add_epi32(a, b));
      }
    }
    const float dx = h2f(x[i].d), dmx = h2f(x[i].dmin);
    for (int t = 0; t < NT; ++t) {
      // bsums pair sums (one per 32-element sub-block) times the mins.
      const __m128i b0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(y[t][i].bsums));
      const __m128i b1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(y[t][i].bsums + 8));
      const __m128i prod = _mm_madd_epi16(mins16, _mm_hadd_epi16(b0, b1));
      acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(y[t][i].d * dx), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
      acc_m[t] = _mm_fmadd_ps(_mm_set1_ps(y[t][i].d * dmx), _mm_cvtepi32_ps(prod), acc_m[t]);
    }
  }
  for (int t = 0; t < NT; ++t) out[t * os] = hsum8(acc[t]) - hsum128(acc_m[t]);
}

// ---------------------------------------------------------------- Q2_K, Q3_K

// Both pack 2-bit values as: qs[32h + l] bits 2k..2k+1 = element 128h + 32k + l;
// each 32-run has two 16-element scales, one per 128-bit lane.
template <bool kQ3, class Block, int NT>
void k23(std::int64_t n, const void* w, const void* act, std::size_t as, float* out,
         std::size_t os) {
  const auto* x = static_cast<const Block*>(w);
  const std::int64_t nb = n / kQK_K;
  const BlockQ8_K* y[NT];
  __m256 acc[NT], acc_m[NT];
  for (int t = 0; t < NT; ++t) {
    y[t] = act_row<BlockQ8_K>(act, as, t);
    acc[t] = _mm256_setzero_ps();
    acc_m[t] = _mm256_setzero_ps();
  }
  const __m256i m3 = _mm256_set1_epi8(3);
  const __m256i one = _mm256_set1_epi8(1);
  const __m256i k4 = _mm256_set1_epi8(4);
  for (std::int64_t i = 0; i < nb; ++i) {
    prefetch_ahead<kPrefetchAheadAvx2>(x + i, sizeof(Block));
    std::int16_t sc[16];
    __m256i mins16 = _mm256_setzero_si256();
    __m256i hmask = _mm256_setzero_si256();
    if constexpr (kQ3) {
      for (int j = 0; j < 16; ++j)
        sc[j] = static_cast<std::int16_t>(scale_q3_k(j, x[i].scales) - 32);
      hmask = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].hmask));
    } else {
      for (int j = 0; j < 16; ++j) sc[j] = x[i].scales[j] & 0xF;
      const __m128i s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].scales));
      mins16 = _mm256_cvtepu8_epi16(_mm_srli_epi16(_mm_and_si128(s, _mm_set1_epi8(-16)), 4));
    }
    __m256i sumi[NT];
    for (int t = 0; t < NT; ++t) sumi[t] = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i qs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qs + 32 * h));
      for (int k = 0; k < 4; ++k) {
        __m256i q = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * k), m3);
        if constexpr (kQ3) {
          // q3 = q2 - 4 * (1 - hbit) = (q2 + 4 * hbit) - 4: unsigned 0..7, minus 4 after.
          const __m256i hb = _mm256_and_si256(_mm256_srli_epi16(hmask, 4 * h + k), one);
          q = _mm256_or_si256(q, _mm256_slli_epi16(hb, 2));
        }
        const int s = 8 * h + 2 * k;
        const __m256i scv = _mm256_set_m128i(_mm_set1_epi16(sc[s + 1]), _mm_set1_epi16(sc[s]));
        for (int t = 0; t < NT; ++t) {
          const __m256i yq =
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[t][i].qs + 128 * h + 32 * k));
          __m256i p = _mm256_maddubs_epi16(q, yq);
          if constexpr (kQ3) p = _mm256_sub_epi16(p, _mm256_maddubs_epi16(k4, yq));
          sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(p, scv));
        }
      }
    }
    const float dx = h2f(x[i].d);
    for (int t = 0; t < NT; ++t) {
      acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(y[t][i].d * dx), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
      if constexpr (!kQ3) {
        const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[t][i].bsums));
        const __m256 summs = _mm256_cvtepi32_ps(_mm256_madd_epi16(mins16, bs));
        acc_m[t] = _mm256_fmadd_ps(_mm256_set1_ps(y[t][i].d * h2f(x[i].dmin)), summs, acc_m[t]);
      }
    }
  }
  for (int t = 0; t < NT; ++t) out[t * os] = hsum8(_mm256_sub_ps(acc[t], acc_m[t]));
}

// ---------------------------------------------------------------- Q6_K

template <int NT>
void q6_k(std::int64_t n, const void* w, const void* act, std::size_t as, float* out,
          std::size_t os) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const std::int64_t nb = n / kQK_K;
  const BlockQ8_K* y[NT];
  __m256 acc[NT];
  for (int t = 0; t < NT; ++t) {
    y[t] = act_row<BlockQ8_K>(act, as, t);
    acc[t] = _mm256_setzero_ps();
  }
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i m2 = _mm256_set1_epi8(0x03);
  for (std::int64_t i = 0; i < nb; ++i) {
    prefetch_ahead<kPrefetchAheadAvx2>(x + i, sizeof(BlockQ6_K));
    // The 16 sub-block scales as 16-bit words, and each half's 8 in both lanes.
    const __m256i scales =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].scales)));
    const __m256i half_scales[2] = {_mm256_permute2x128_si256(scales, scales, 0x00),
                                    _mm256_permute2x128_si256(scales, scales, 0x11)};
    // sum (q - 32) s y = sum q s y - 32 sum_j s_j bsums_j: the offset comes from
    // the activations' 16-element sums, not from a second product per group.
    __m256i sumi[NT];
    for (int t = 0; t < NT; ++t) {
      const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[t][i].bsums));
      sumi[t] = _mm256_slli_epi32(_mm256_madd_epi16(scales, bsums), 5);
      sumi[t] = _mm256_sub_epi32(_mm256_setzero_si256(), sumi[t]);
    }
    for (int h = 0; h < 2; ++h) {
      const std::uint8_t* ql = x[i].ql + 64 * h;
      const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
      const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qh + 32 * h));
      // Unsigned 6-bit q (0..63) of the four 32-element groups of this half.
      __m256i q[4];
      q[0] =
          _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4));
      q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
                             _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m2), 4));
      q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                             _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m2), 4));
      q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                             _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m2), 4));
#pragma GCC unroll 4
      for (int g = 0; g < 4; ++g) {
        // Scales of elements 0..15 and 16..31 of the group (sub-blocks 2g, 2g + 1
        // of the half) in the two 128-bit lanes: one byte shuffle per lane.
        const __m256i scv = _mm256_shuffle_epi8(
            half_scales[h],
            _mm256_set_m128i(_mm_set1_epi16(static_cast<short>(0x0302 + 0x0404 * g)),
                             _mm_set1_epi16(static_cast<short>(0x0100 + 0x0404 * g))));
        for (int t = 0; t < NT; ++t) {
          const __m256i yq =
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[t][i].qs + 128 * h + 32 * g));
          // q in 0..63: pair sums of q . y stay far from int16 saturation.
          sumi[t] =
              _mm256_add_epi32(sumi[t], _mm256_madd_epi16(_mm256_maddubs_epi16(q[g], yq), scv));
        }
      }
    }
    const float dx = h2f(x[i].d);
    for (int t = 0; t < NT; ++t) {
      acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(y[t][i].d * dx), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) out[t * os] = hsum8(acc[t]);
}

// ---------------------------------------------------------------- IQ4_NL, IQ4_XS

// 32 signed values of a 16-entry codebook (IQ4, MXFP4) for one run of 16 bytes
// of nibbles (Q4_0's layout).
inline __m256i codebook_lookup(const std::int8_t* table, const std::uint8_t* qs) {
  const __m256i t =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table)));
  return _mm256_shuffle_epi8(t, nibbles(qs));
}
inline __m256i iq4_lookup(const std::uint8_t* qs) { return codebook_lookup(kIQ4Values, qs); }

inline __m256i unpack_iq4_nl(const BlockIQ4_NL& b) { return iq4_lookup(b.qs); }

// MXFP4 (gpt-oss experts): the doubled E2M1 codes (kMXFP4Values, |v| <= 12)
// out of one byte shuffle, as IQ4_NL's; the E8M0 scale halved (mxfp4_scale).
inline __m256i unpack_mxfp4(const BlockMXFP4& b) { return codebook_lookup(kMXFP4Values, b.qs); }
inline float mxfp4_block_scale(const BlockMXFP4& b) { return mxfp4_scale(b.e); }

// Codebook values reach +-127, so |x| * y pairs still fit maddubs' int16; the
// sub-block scale then multiplies in madd (scale * 2 * 127 * 128 fits int32).
template <int NT>
void iq4_xs(std::int64_t n, const void* w, const void* act, std::size_t as, float* out,
            std::size_t os) {
  const auto* x = static_cast<const BlockIQ4_XS*>(w);
  const std::int64_t nb = n / kQK_K;
  const BlockQ8_K* y[NT];
  __m256 acc[NT];
  for (int t = 0; t < NT; ++t) {
    y[t] = act_row<BlockQ8_K>(act, as, t);
    acc[t] = _mm256_setzero_ps();
  }
  for (std::int64_t i = 0; i < nb; ++i) {
    prefetch_ahead<kPrefetchAheadAvx2>(x + i, sizeof(BlockIQ4_XS));
    __m256i sumi[NT];
    for (int t = 0; t < NT; ++t) sumi[t] = _mm256_setzero_si256();
    for (int ib = 0; ib < kQK_K / 32; ++ib) {
      const __m256i q = iq4_lookup(x[i].qs + 16 * ib);
      const __m256i q_abs = _mm256_sign_epi8(q, q);
      const __m256i scale = _mm256_set1_epi16(static_cast<short>(iq4_xs_scale(x[i], ib)));
      for (int t = 0; t < NT; ++t) {
        const __m256i yq =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[t][i].qs + 32 * ib));
        const __m256i p16 = _mm256_maddubs_epi16(q_abs, _mm256_sign_epi8(yq, q));
        sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(p16, scale));
      }
    }
    const float d = h2f(x[i].d);
    for (int t = 0; t < NT; ++t) {
      acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * y[t][i].d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) out[t * os] = hsum8(acc[t]);
}

// n_act (any count) in tiles of up to 4: accumulators for more would spill.
template <template <int> class K>
void tile(std::int64_t n, const void* w, const void* act, std::size_t as, int n_act, float* out,
          std::size_t os) {
  for_each_tile<4>(act, as, n_act, out, os,
                   [&](auto nt, const void* a, float* o) { K<nt>::run(n, w, a, as, o, os); });
}

template <int NT>
struct KF32 {
  static void run(std::int64_t n, const void* w, const void* a, std::size_t as, float* o,
                  std::size_t os) {
    float_dot<LoadF32, NT>(n, w, a, as, o, os);
  }
};
template <int NT>
struct KF16 {
  static void run(std::int64_t n, const void* w, const void* a, std::size_t as, float* o,
                  std::size_t os) {
    float_dot<LoadF16, NT>(n, w, a, as, o, os);
  }
};
template <int NT>
struct KBF16 {
  static void run(std::int64_t n, const void* w, const void* a, std::size_t as, float* o,
                  std::size_t os) {
    float_dot<LoadBF16, NT>(n, w, a, as, o, os);
  }
};
template <int NT>
struct KQ4_0 {
  static void run(std::int64_t n, const void* w, const void* a, std::size_t as, float* o,
                  std::size_t os) {
    q_x_q8_0<BlockQ4_0, unpack_q4_0, NT>(n, w, a, as, o, os);
  }
};
template <int NT>
struct KIQ4_NL {
  static void run(std::int64_t n, const void* w, const void* a, std::size_t as, float* o,
                  std::size_t os) {
    q_x_q8_0<BlockIQ4_NL, unpack_iq4_nl, NT>(n, w, a, as, o, os);
  }
};
template <int NT>
struct KMXFP4 {
  static void run(std::int64_t n, const void* w, const void* a, std::size_t as, float* o,
                  std::size_t os) {
    q_x_q8_0<BlockMXFP4, unpack_mxfp4, NT, mxfp4_block_scale>(n, w, a, as, o, os);
  }
};
template <int NT>
struct KIQ4_XS {
  static void run(std::int64_t n, const void* w, const void* a, std::size_t as, float* o,
                  std::size_t os) {
    iq4_xs<NT>(n, w, a, as, o, os);
  }
};
template <int NT>
struct KQ8_0 {
  static void run(std::int64_t n, const void* w, const void* a, std::size_t as, float* o,
                  std::size_t os) {
    q_x_q8_0<BlockQ8_0, unpack_q8_0, NT>(n, w, a, as, o, os);
  }
};
template <int NT>
struct KQ4_K {
  static void run(std::int64_t n, const void* w, const void* a, std::size_t as, float* o,
                  std::size_t os) {
    k4<BlockQ4_K, false, NT>(n, w, a, as, o, os);
  }
};
template <int NT>
struct KQ5_K {
  static void run(std::int64_t n, const void* w, const void* a, std::size_t as, float* o,
                  std::size_t os) {
    k4<BlockQ5_K, true, NT>(n, w, a, as, o, os);
  }
};
template <int NT>
struct KQ2_K {
  static void run(std::int64_t n, const void* w, const void* a, std::size_t as, float* o,
                  std::size_t os) {
    k23<false, BlockQ2_K, NT>(n, w, a, as, o, os);
  }
};
template <int NT>
struct KQ3_K {
  static void run(std::int64_t n, const void* w, const void* a, std::size_t as, float* o,
                  std::size_t os) {
    k23<true, BlockQ3_K, NT>(n, w, a, as, o, os);
  }
};
template <int NT>
struct KQ4_1 {
  static void run(std::int64_t n, const void* w, const void* a, std::size_t as, float* o,
                  std::size_t os) {
    q_x_q8_1<BlockQ4_1, unpack_q4_1, NT>(n, w, a, as, o, os);
  }
};
template <int NT>
struct KQ5_1 {
  static void run(std::int64_t n, const void* w, const void* a, std::size_t as, float* o,
                  std::size_t os) {
    q_x_q8_1<BlockQ5_1, unpack_q5_1, NT>(n, w, a, as, o, os);
  }
};
template <int NT>
struct KQ5_0 {
  static void run(std::int64_t n, const void* w, const void* a, std::size_t as, float* o,
                  std::size_t os) {
    q_x_q8_0<BlockQ5_0, unpack_q5_0, NT>(n, w, a, as, o, os);
  }
};
template <int NT>
struct KQ6_K {
  static void run(std::int64_t n, const void* w, const void* a, std::size_t as, float* o,
                  std::size_t os) {
    q6_k<NT>(n, w, a, as, o, os);
  }
};

}  // namespace

void f32_f32(std::int64_t n, const void* w, const void* a, std::size_t as, int nt, float* o,
             std::size_t os) {
  tile<KF32>(n, w, a, as, nt, o, os);
}
void f16_f32(std::int64_t n, const void* w, const void* a, std::size_t as, int nt, float* o,
             std::size_t os) {
  tile<KF16>(n, w, a, as, nt, o, os);
}
void bf16_f32(std::int64_t n, const void* w, const void* a, std::size_t as, int nt, float* o,
              std::size_t os) {
  tile<KBF16>(n, w, a, as, nt, o, os);
}
// Float rows of one token (dot.h FloatRows), spaced apart by the caller so
// that each is a stream for the prefetchers (dot_rows_avx512.cpp); rows of
// kLongRow and more kLongRowRows2 at a time, sharing their L1-filling
// activations (SEAM_CPU=avx2 on Zen 4, 1B F16 tg64 at 1 thread: 10.7 -> 11.8
// tok/s).
void short_rows_f32(std::int64_t n, const void* w, std::size_t rs, const void* a, float* o) {
  float_block<LoadF32, kShortRowRows, 1>(n, w, rs, a, 0, o, 0);
}
void long_rows_f32(std::int64_t n, const void* w, std::size_t rs, const void* a, float* o) {
  float_block<LoadF32, kLongRowRows2, 1>(n, w, rs, a, 0, o, 0);
}
void short_rows_f16(std::int64_t n, const void* w, std::size_t rs, const void* a, float* o) {
  float_block<LoadF16, kShortRowRows, 1>(n, w, rs, a, 0, o, 0);
}
void long_rows_f16(std::int64_t n, const void* w, std::size_t rs, const void* a, float* o) {
  float_block<LoadF16, kLongRowRows2, 1>(n, w, rs, a, 0, o, 0);
}
void short_rows_bf16(std::int64_t n, const void* w, std::size_t rs, const void* a, float* o) {
  float_block<LoadBF16, kShortRowRows, 1>(n, w, rs, a, 0, o, 0);
}
void long_rows_bf16(std::int64_t n, const void* w, std::size_t rs, const void* a, float* o) {
  float_block<LoadBF16, kLongRowRows2, 1>(n, w, rs, a, 0, o, 0);
}
void rows_q4_0(std::int64_t n, const void* w, std::size_t rs, const void* a, float* o) {
  q_x_q8_0_rows<BlockQ4_0, unpack_q4_0>(n, w, rs, a, o);
}
void rows_q5_0(std::int64_t n, const void* w, std::size_t rs, const void* a, float* o) {
  q_x_q8_0_rows<BlockQ5_0, unpack_q5_0>(n, w, rs, a, o);
}
void rows_q8_0(std::int64_t n, const void* w, std::size_t rs, const void* a, float* o) {
  q_x_q8_0_rows<BlockQ8_0, unpack_q8_0>(n, w, rs, a, o);
}
void rows_iq4_nl(std::int64_t n, const void* w, std::size_t rs, const void* a, float* o) {
  q_x_q8_0_rows<BlockIQ4_NL, unpack_iq4_nl>(n, w, rs, a, o);
}
void q4_0_q8_0(std::int64_t n, const void* w, const void* a, std::size_t as, int nt, float* o,
               std::size_t os) {
  tile<KQ4_0>(n, w, a, as, nt, o, os);
}
void q8_0_q8_0(std::int64_t n, const void* w, const void* a, std::size_t as, int nt, float* o,
               std::size_t os) {
  tile<KQ8_0>(n, w, a, as, nt, o, os);
}
void q4_k_q8_k(std::int64_t n, const void* w, const void* a, std::size_t as, int nt, float* o,
               std::size_t os) {
  tile<KQ4_K>(n, w, a, as, nt, o, os);
}
void q6_k_q8_k(std::int64_t n, const void* w, const void* a, std::size_t as, int nt, float* o,
               std::size_t os) {
  tile<KQ6_K>(n, w, a, as, nt, o, os);
}
void q5_k_q8_k(std::int64_t n, const void* w, const void* a, std::size_t as, int nt, float* o,
               std::size_t os) {
  tile<KQ5_K>(n, w, a, as, nt, o, os);
}
void q2_k_q8_k(std::int64_t n, const void* w, const void* a, std::size_t as, int nt, float* o,
               std::size_t os) {
  tile<KQ2_K>(n, w, a, as, nt, o, os);
}
void q3_k_q8_k(std::int64_t n, const void* w, const void* a, std::size_t as, int nt, float* o,
               std::size_t os) {
  tile<KQ3_K>(n, w, a, as, nt, o, os);
}
void q4_1_q8_1(std::int64_t n, const void* w, const void* a, std::size_t as, int nt, float* o,
               std::size_t os) {
  tile<KQ4_1>(n, w, a, as, nt, o, os);
}
void q5_1_q8_1(std::int64_t n, const void* w, const void* a, std::size_t as, int nt, float* o,
               std::size_t os) {
  tile<KQ5_1>(n, w, a, as, nt, o, os);
}
void q5_0_q8_0(std::int64_t n, const void* w, const void* a, std::size_t as, int nt, float* o,
               std::size_t os) {
  tile<KQ5_0>(n, w, a, as, nt, o, os);
}

void iq4_nl_q8_0(std::int64_t n, const void* w, const void* a, std::size_t as, int nt, float* o,
                 std::size_t os) {
  tile<KIQ4_NL>(n, w, a, as, nt, o, os);
}
void mxfp4_q8_0(std::int64_t n, const void* w, const void* a, std::size_t as, int nt, float* o,
                std::size_t os) {
  tile<KMXFP4>(n, w, a, as, nt, o, os);
}
void iq4_xs_q8_k(std::int64_t n, const void* w, const void* a, std::size_t as, int nt, float* o,
                 std::size_t os) {
  tile<KIQ4_XS>(n, w, a, as, nt, o, os);
}

}  // namespace seam::dot::avx2
