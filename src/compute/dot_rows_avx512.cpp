// AVX-512 (F/BW/VL/VNNI) dot kernels for decode: one weight row against up to
// 8 activation rows (the AVX2 ones: 4), for Q4_0, Q5_0, Q8_0, IQ4_NL,
// Q4_K, Q5_K, Q6_K, F32, F16 and BF16 weights. Decode reads every weight byte
// once per token, so these kernels must spend fewer instructions per weight
// byte than DRAM takes to deliver it; the AVX2 kernels did not for the 4-bit
// types (one 32-element block per 256-bit register, two scalar fp16 scale
// conversions per block and token).
// Compiled with the AVX-512 flags (CMakeLists.txt); see dot.h on keeping this
// unit's code out of baseline callers.
//
// 32-element block types (Q4_0, Q5_0, Q8_0, IQ4_NL): two blocks per 512-bit
// register as signed int8, in element order. vpdpbusd wants one unsigned
// operand: the activations are biased by +128 (xor 0x80), and the accumulator
// starts at -128 * sum(w) per 4 lanes (one more vpdpbusd per block pair, shared
// by every token), so each int32 lane holds an exact sum of a * w. The fp16
// scales of 16 blocks are gathered at once, one product dw * da per block, and
// a permute hands each block pair its two scales. Integer sums are exact; only
// the f32 accumulation order differs from the scalar reference.
//
// K-quants (Q4_K, Q5_K, Q6_K): 64 consecutive elements per register; unsigned
// weights against signed activations through vpmaddubsw (no int16 overflow:
// 2 * 63 * 128 < 2^15), then vpmaddwd by the sub-block scales, as the AVX2
// kernels, at twice the width. Q6_K's -32 offset is taken out with the
// activation block sums (bsums) instead of a second multiply per element.
//
// BF16 weights are widened to f32 exactly (a 16-bit shift) and multiplied in
// f32: vdpbf16ps would need the activations rounded to bf16, and decode is
// bound by the weight bytes, not by these multiplies.
//
// GCC 12's AVX-512 headers self-initialize their "undefined" vectors
// (__m512 __Y = __Y), which -W(maybe-)uninitialized reports once inlined here.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstddef>
#include <cstring>

#include "compute/dot.h"
#include "compute/dot_tile.h"
#include "compute/prefetch.h"
#include "compute/quant_blocks.h"

namespace seam::dot::avx512 {
namespace {

using namespace seam::quant;

template <class Block>
inline const Block* act_row(const void* act, std::size_t stride, int t) {
  return reinterpret_cast<const Block*>(static_cast<const std::byte*>(act) + t * stride);
}

inline float h2f(std::uint16_t h) { return _cvtsh_ss(h); }

// ---------------------------------------------------------------- 32-element blocks

// The fp16 at the start of up to 16 consecutive blocks, `stride` bytes apart,
// as f32 (lanes not in `m`: 0).
inline __m512 gather_f16(const void* base, __m512i offsets, __mmask16 m) {
  const __m512i g = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, offsets, base, 1);
  return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(g));
}

// 16-byte nibble fields of two blocks, each twice: [q0 | q0 | q1 | q1].
inline __m512i fields2(const std::uint8_t* q0, const std::uint8_t* q1) {
  const __m512i v = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q0)));
  return _mm512_mask_broadcast_i32x4(v, 0xFF00,
                                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(q1)));
}

// -> [b0 lo | b0 hi | b1 lo | b1 hi], which is element order: low nibbles are
// elements 0..15, high nibbles 16..31.
inline __m512i nibbles2(const std::uint8_t* q0, const std::uint8_t* q1) {
  const __m512i v = fields2(q0, q1);
  return _mm512_and_si512(_mm512_mask_srli_epi16(v, 0xFF00FF00u, v, 4),  // lanes 1 and 3
                          _mm512_set1_epi8(0x0F));
}

inline __m512i two_halves(const void* p0, const void* p1) {
  return _mm512_inserti64x4(
      _mm512_zextsi256_si512(_mm256_loadu_si256(static_cast<const __m256i*>(p0))),
      _mm256_loadu_si256(static_cast<const __m256i*>(p1)), 1);
}

// Signed int8 weights of two blocks, element order. Every block starts with its fp16 d.
// load_u: the same weights plus kOff, as unsigned bytes (the prepared-row kernels).
struct PQ8_0 {
  using Block = BlockQ8_0;
  static constexpr int kOff = 128;
  static constexpr bool kHigh16 = false;  // see PQ4_0
  static __m512i load(const Block& b0, const Block& b1) { return two_halves(b0.qs, b1.qs); }
  static __m512i load_u(const Block& b0, const Block& b1) {
    return _mm512_xor_si512(two_halves(b0.qs, b1.qs), _mm512_set1_epi8(static_cast<char>(0x80)));
  }
};
struct PQ4_0 {
  using Block = BlockQ4_0;
  static constexpr int kOff = 8;
  // load_u leaves the high nibbles where they are (16 q, < 256), saving the
  // shift that competed with vpdpbusd, the conversion and the FMA for the one
  // 512-bit port that runs all four; the prepared kernels scale those lanes by
  // 1/16 (kHigh16) and prepare() gives them 16 times the kOff correction. A
  // sum of at most 16 * 11,776 is exact in int32 and in f32, and (16 S) (s / 16)
  // rounds as S s does: the results are the same bits as with the shift.
  static constexpr bool kHigh16 = true;
  static __m512i load(const Block& b0, const Block& b1) {
    return _mm512_sub_epi8(nibbles2(b0.qs, b1.qs), _mm512_set1_epi8(8));
  }
  static __m512i load_u(const Block& b0, const Block& b1) {
    // fields2 & (0x0F in 128-bit lanes 0 and 2, 0xF0 in 1 and 3).
    const __m512i keep = _mm512_set_epi64(
        static_cast<long long>(0xF0F0F0F0F0F0F0F0ull),
        static_cast<long long>(0xF0F0F0F0F0F0F0F0ull), 0x0F0F0F0F0F0F0F0F, 0x0F0F0F0F0F0F0F0F,
        static_cast<long long>(0xF0F0F0F0F0F0F0F0ull),
        static_cast<long long>(0xF0F0F0F0F0F0F0F0ull), 0x0F0F0F0F0F0F0F0F, 0x0F0F0F0F0F0F0F0F);
    return _mm512_and_si512(fields2(b0.qs, b1.qs), keep);
  }
};
struct PQ5_0 {
  using Block = BlockQ5_0;
  static constexpr int kOff = 16;
  static constexpr bool kHigh16 = false;  // see PQ4_0
  static __mmask64 high(const Block& b0, const Block& b1) {
    std::uint32_t h0, h1;
    std::memcpy(&h0, b0.qh, 4);
    std::memcpy(&h1, b1.qh, 4);
    return _cvtu64_mask64(h0 | static_cast<std::uint64_t>(h1) << 32);
  }
  static __m512i load(const Block& b0, const Block& b1) {
    // q - 16 where the fifth bit is clear, q where it is set (q + 16 - 16).
    const __m512i q = nibbles2(b0.qs, b1.qs);
    return _mm512_mask_sub_epi8(q, _knot_mask64(high(b0, b1)), q, _mm512_set1_epi8(16));
  }
  static __m512i load_u(const Block& b0, const Block& b1) {
    const __m512i q = nibbles2(b0.qs, b1.qs);
    return _mm512_mask_add_epi8(q, high(b0, b1), q, _mm512_set1_epi8(16));
  }
};
struct PIQ4_NL {
  using Block = BlockIQ4_NL;
  static constexpr int kOff = 128;
  static constexpr bool kHigh16 = false;  // see PQ4_0
  static __m512i table() {
    return _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4Values)));
  }
  static __m512i load(const Block& b0, const Block& b1) {
    return _mm512_shuffle_epi8(table(), nibbles2(b0.qs, b1.qs));
  }
  static __m512i load_u(const Block& b0, const Block& b1) {
    const __m512i t = _mm512_xor_si512(table(), _mm512_set1_epi8(static_cast<char>(0x80)));
    return _mm512_shuffle_epi8(t, nibbles2(b0.qs, b1.qs));
  }
};

template <class P, int NT>
void q32(std::int64_t n, const void* w, const void* act, std::size_t as, float* out,
         std::size_t os) {
  using Block = typename P::Block;
  static_assert(offsetof(Block, d) == 0 && offsetof(BlockQ8_0, d) == 0);
  const auto* x = static_cast<const Block*>(w);
  const std::int64_t nb = n / 32;
  const BlockQ8_0* y[NT];
  __m512 acc[NT], acc2[NT];
  for (int t = 0; t < NT; ++t) {
    y[t] = act_row<BlockQ8_0>(act, as, t);
    acc[t] = acc2[t] = _mm512_setzero_ps();
  }
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i w_off = _mm512_mullo_epi32(iota, _mm512_set1_epi32(sizeof(Block)));
  const __m512i a_off = _mm512_mullo_epi32(iota, _mm512_set1_epi32(sizeof(BlockQ8_0)));
  // Lanes 0..7 take the scale of the pair's first block, 8..15 of its second.
  const __m512i pair_idx = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
  for (std::int64_t g = 0; g < nb; g += 16) {
    const int rem = nb - g < 16 ? static_cast<int>(nb - g) : 16;
    const __mmask16 m = static_cast<__mmask16>((1u << rem) - 1);
    prefetch_ahead<kPrefetchAheadAvx512>(x + g, 16 * sizeof(Block));
    const __m512 dw = gather_f16(x + g, w_off, m);
    __m512 s[NT];  // dw * da per block of the group
    for (int t = 0; t < NT; ++t) s[t] = _mm512_mul_ps(dw, gather_f16(y[t] + g, a_off, m));
    // Block pair j of the group into `into` (two accumulator sets alternate, so
    // consecutive pairs' FMAs do not wait on each other).
    auto pair = [&](int j, __m512* into) {
      // An odd last block pairs with itself; its second copy has scale 0.
      const std::int64_t i0 = g + 2 * j, i1 = 2 * j + 1 < rem ? i0 + 1 : i0;
      const __m512i wq = P::load(x[i0], x[i1]);
      const __m512i start = _mm512_sub_epi32(_mm512_setzero_si512(),
                                             _mm512_dpbusd_epi32(_mm512_setzero_si512(), bias, wq));
      const __m512i sidx = _mm512_add_epi32(pair_idx, _mm512_set1_epi32(2 * j));
      for (int t = 0; t < NT; ++t) {
        const __m512i a = _mm512_xor_si512(two_halves(y[t][i0].qs, y[t][i1].qs), bias);
        const __m512i p = _mm512_dpbusd_epi32(start, a, wq);
        into[t] =
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_permutexvar_ps(sidx, s[t]), into[t]);
      }
    };
    for (int j = 0; 2 * j < rem; j += 2) {
      pair(j, acc);
      if (2 * j + 2 < rem) pair(j + 1, acc2);
    }
  }
  for (int t = 0; t < NT; ++t) out[t * os] = _mm512_reduce_add_ps(_mm512_add_ps(acc[t], acc2[t]));
}

// ---------------------------------------------------------------- prepared rows

// Decode on prepared activations (dot.h RowFns). The weights are read as
// unsigned bytes w + kOff, so sum w * a = sum (w + kOff) * a - kOff * sum a; the
// second term, one int32 per 4 activation values, is the same for every weight
// row, so prepare() stores it negated and the kernel starts vpdpbusd's
// accumulator from it: one multiply-add instruction per block pair and token.
// Layout per token, 64-byte rounded: int8 a[n] | int32 neg[n / 4] | f32 d[n / 32].
std::size_t round64(std::size_t b) { return (b + 63) / 64 * 64; }

template <class P>
std::size_t row_act_bytes(std::int64_t n) {
  return round64(2 * static_cast<std::size_t>(n) + static_cast<std::size_t>(n / 32) * 4);
}

template <class P>
void row_prepare(std::int64_t n, const void* act, void* dst) {
  const auto* y = static_cast<const BlockQ8_0*>(act);
  auto* q = static_cast<std::int8_t*>(dst);
  auto* neg = reinterpret_cast<std::int32_t*>(q + n);
  auto* d = reinterpret_cast<float*>(neg + n / 4);
  const __m256i off = _mm256_set1_epi8(static_cast<char>(P::kOff));
  for (std::int64_t i = 0; i < n / 32; ++i) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * i), v);
    __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), off, v);  // kOff * sum of 4
    // Lanes 4..7 cover elements 16..31: 16 kOff there where load_u keeps 16 q.
    if constexpr (P::kHigh16) s = _mm256_blend_epi32(s, _mm256_slli_epi32(s, 4), 0xF0);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(neg + 8 * i),
                        _mm256_sub_epi32(_mm256_setzero_si256(), s));
    d[i] = h2f(y[i].d);
  }
}

// The sums of four 16-lane vectors, [sum a, sum b, sum c, sum d]: interleave
// and add pairwise until each 128-bit lane holds one partial sum of each, then
// add the four lanes. Every q32_rows result goes through it, so a row's value
// is the same bits whichever kernel (one row or kDecodeRows, any token tile)
// computed it: a matmul's output then does not depend on how its rows were
// split among threads or how many tokens shared the call.
inline __m128 reduce4(__m512 a, __m512 b, __m512 c, __m512 d) {
  const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
  const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
  const __m512 q = _mm512_add_ps(
      _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(ab), _mm512_castps_pd(cd))),
      _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(ab), _mm512_castps_pd(cd))));
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(q),
                                 _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(q), 1)));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

// Lane l of pair j's scale index: block 2j (l < 8) or 2j + 1 of its group.
alignas(64) constexpr std::int32_t kPairScale[8][16] = {
    {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1},
    {2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3},
    {4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5},
    {6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7},
    {8, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9},
    {10, 10, 10, 10, 10, 10, 10, 10, 11, 11, 11, 11, 11, 11, 11, 11},
    {12, 12, 12, 12, 12, 12, 12, 12, 13, 13, 13, 13, 13, 13, 13, 13},
    {14, 14, 14, 14, 14, 14, 14, 14, 15, 15, 15, 15, 15, 15, 15, 15}};

// kPairScale with the lanes of each block's elements 16..31 (4..7, 12..15)
// taken from the second source of vpermt2ps: s / 16 (kHigh16).
constexpr auto kPairScaleHigh16 = [] {
  struct {
    alignas(64) std::int32_t idx[8][16];
  } t{};
  for (int j = 0; j < 8; ++j)
    for (int l = 0; l < 16; ++l) t.idx[j][l] = kPairScale[j][l] + ((l / 4) % 2 ? 16 : 0);
  return t;
}();

// Pair j's scale per lane: its block's dw * da, divided by 16 on the lanes
// where P's load_u keeps 16 q (s16 = s / 16, exact).
template <class P>
inline __m512 pair_scale(int j, __m512 s, __m512 s16) {
  if constexpr (P::kHigh16)
    return _mm512_permutex2var_ps(s, _mm512_load_si512(kPairScaleHigh16.idx[j]), s16);
  else
    return _mm512_permutexvar_ps(_mm512_load_si512(kPairScale[j]), s);
}

template <class P, int NT>
void q32_rows(std::int64_t n, const void* w, const void* act, std::size_t as, float* out,
              std::size_t os) {
  using Block = typename P::Block;
  const auto* x = static_cast<const Block*>(w);
  const std::int64_t nb = n / 32;
  const std::int8_t* aq[NT];
  const std::int32_t* an[NT];
  const float* ad[NT];
  __m512 acc[NT], acc2[NT];
  for (int t = 0; t < NT; ++t) {
    aq[t] = reinterpret_cast<const std::int8_t*>(static_cast<const std::byte*>(act) + t * as);
    an[t] = reinterpret_cast<const std::int32_t*>(aq[t] + n);
    ad[t] = reinterpret_cast<const float*>(an[t] + n / 4);
    acc[t] = acc2[t] = _mm512_setzero_ps();
  }
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i w_off = _mm512_mullo_epi32(iota, _mm512_set1_epi32(sizeof(Block)));
  for (std::int64_t g = 0; g < nb; g += 16) {
    const int rem = nb - g < 16 ? static_cast<int>(nb - g) : 16;
    const __mmask16 m = static_cast<__mmask16>((1u << rem) - 1);
    prefetch_ahead<kPrefetchAheadAvx512>(x + g, 16 * sizeof(Block));
    const __m512 dw = gather_f16(x + g, w_off, m);
    __m512 s[NT], s16[NT];  // dw * da per block of the group; / 16 (kHigh16)
    for (int t = 0; t < NT; ++t) {
      s[t] = _mm512_mul_ps(dw, _mm512_maskz_loadu_ps(m, ad[t] + g));
      s16[t] = P::kHigh16 ? _mm512_mul_ps(s[t], _mm512_set1_ps(1.0f / 16)) : s[t];
    }
    // Full block pair j of the group into `into` (two accumulator sets
    // alternate, so consecutive pairs' FMAs do not wait on each other).
    auto pair = [&](int j, __m512* into) {
      const std::int64_t i0 = g + 2 * j;
      const __m512i wq = P::load_u(x[i0], x[i0 + 1]);
      for (int t = 0; t < NT; ++t) {
        const __m512i p = _mm512_dpbusd_epi32(_mm512_loadu_si512(an[t] + 8 * i0), wq,
                                              _mm512_loadu_si512(aq[t] + 32 * i0));
        into[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), pair_scale<P>(j, s[t], s16[t]), into[t]);
      }
    };
    int j = 0;
    for (; 2 * j + 3 < rem; j += 2) {
      pair(j, acc);
      pair(j + 1, acc2);
    }
    if (2 * j + 1 < rem) pair(j++, acc);
    if (2 * j < rem) {
      // The odd last block: its lanes only (the rest read nothing and add 0).
      const std::int64_t i0 = g + 2 * j;
      const __m512i wq = P::load_u(x[i0], x[i0]);
      for (int t = 0; t < NT; ++t) {
        const __m512i p =
            _mm512_dpbusd_epi32(_mm512_maskz_loadu_epi32(0x00FF, an[t] + 8 * i0), wq,
                                _mm512_maskz_loadu_epi8(0xFFFFFFFFull, aq[t] + 32 * i0));
        acc2[t] = _mm512_mask3_fmadd_ps(_mm512_cvtepi32_ps(p), pair_scale<P>(j, s[t], s16[t]),
                                        acc2[t], 0x00FF);
      }
    }
  }
  __m512 v[4];
  for (int t = 0; t < NT; t += 4) {
    for (int k = 0; k < 4; ++k) v[k] = t + k < NT ? _mm512_add_ps(acc[t + k], acc2[t + k]) : v[0];
    alignas(16) float sums[4];
    _mm_store_ps(sums, reduce4(v[0], v[1], v[2], v[3]));
    for (int k = 0; k < 4 && t + k < NT; ++k) out[(t + k) * os] = sums[k];
  }
}

// kDecodeRows weight rows against one prepared token (RowFns::dot_rows): the
// same per-row arithmetic as q32_rows<P, 1>, with the activation loads shared
// by the rows and the rows' sums reduced together.
template <class P>
void q32_rows_multi(std::int64_t n, const void* w, std::size_t row_stride, const void* act,
                    float* out) {
  using Block = typename P::Block;
  constexpr int R = kDecodeRows;
  static_assert(R == 4, "the closing reduction transposes four rows");
  const Block* x[R];
  for (int r = 0; r < R; ++r)
    x[r] = reinterpret_cast<const Block*>(static_cast<const std::byte*>(w) + r * row_stride);
  const std::int64_t nb = n / 32;
  const auto* aq = static_cast<const std::int8_t*>(act);
  const auto* an = reinterpret_cast<const std::int32_t*>(aq + n);
  const auto* ad = reinterpret_cast<const float*>(an + n / 4);
  __m512 acc[R], acc2[R];
  for (int r = 0; r < R; ++r) acc[r] = acc2[r] = _mm512_setzero_ps();
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i w_off = _mm512_mullo_epi32(iota, _mm512_set1_epi32(sizeof(Block)));
  for (std::int64_t g = 0; g < nb; g += 16) {
    const int rem = nb - g < 16 ? static_cast<int>(nb - g) : 16;
    const __mmask16 m = static_cast<__mmask16>((1u << rem) - 1);
    const __m512 da = _mm512_maskz_loadu_ps(m, ad + g);
    __m512 s[R], s16[R];  // dw * da per block of the group, per row; / 16 (kHigh16)
    for (int r = 0; r < R; ++r) {
      // The rows are read side by side, so "ahead" is the next R rows: the
      // same blocks of row r + R, which the caller reads next.
      prefetch_ahead<kPrefetchAheadAvx512>(
          reinterpret_cast<const std::byte*>(x[r] + g) + R * row_stride - kPrefetchAheadAvx512 / 2,
          16 * sizeof(Block));
      s[r] = _mm512_mul_ps(gather_f16(x[r] + g, w_off, m), da);
      s16[r] = P::kHigh16 ? _mm512_mul_ps(s[r], _mm512_set1_ps(1.0f / 16)) : s[r];
    }
    auto pair = [&](int j, __m512* into) {
      const std::int64_t i0 = g + 2 * j;
      const __m512i a_neg = _mm512_loadu_si512(an + 8 * i0);
      const __m512i a_q = _mm512_loadu_si512(aq + 32 * i0);
      for (int r = 0; r < R; ++r) {
        const __m512i p = _mm512_dpbusd_epi32(a_neg, P::load_u(x[r][i0], x[r][i0 + 1]), a_q);
        into[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), pair_scale<P>(j, s[r], s16[r]), into[r]);
      }
    };
    int j = 0;
    for (; 2 * j + 3 < rem; j += 2) {
      pair(j, acc);
      pair(j + 1, acc2);
    }
    if (2 * j + 1 < rem) pair(j++, acc);
    if (2 * j < rem) {
      // The odd last block: its lanes only (the rest read nothing and add 0).
      const std::int64_t i0 = g + 2 * j;
      const __m512i a_neg = _mm512_maskz_loadu_epi32(0x00FF, an + 8 * i0);
      const __m512i a_q = _mm512_maskz_loadu_epi8(0xFFFFFFFFull, aq + 32 * i0);
      for (int r = 0; r < R; ++r) {
        const __m512i p = _mm512_dpbusd_epi32(a_neg, P::load_u(x[r][i0], x[r][i0]), a_q);
        acc2[r] = _mm512_mask3_fmadd_ps(_mm512_cvtepi32_ps(p), pair_scale<P>(j, s[r], s16[r]),
                                        acc2[r], 0x00FF);
      }
    }
  }
  _mm_storeu_ps(out, reduce4(_mm512_add_ps(acc[0], acc2[0]), _mm512_add_ps(acc[1], acc2[1]),
                             _mm512_add_ps(acc[2], acc2[2]), _mm512_add_ps(acc[3], acc2[3])));
}

// ---------------------------------------------------------------- Q4_K, Q5_K

template <class Block, bool kHigh, int NT>
void k4(std::int64_t n, const void* w, const void* act, std::size_t as, float* out,
        std::size_t os) {
  const auto* x = static_cast<const Block*>(w);
  const std::int64_t nb = n / kQK_K;
  const BlockQ8_K* y[NT];
  __m512 acc[NT];
  __m256 acc_m[NT];
  for (int t = 0; t < NT; ++t) {
    y[t] = act_row<BlockQ8_K>(act, as, t);
    acc[t] = _mm512_setzero_ps();
    acc_m[t] = _mm256_setzero_ps();
  }
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  // Register p holds elements 64p..64p+31 (sub-block 2p) then 64p+32.. (2p+1):
  // the 32 nibble bytes broadcast to both halves, the high half shifted by 4.
  const __m512i half = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(1), 1);
  __m512i scale_idx[4], hbit[4];
  for (int p = 0; p < 4; ++p) {
    scale_idx[p] = _mm512_add_epi16(half, _mm512_set1_epi16(static_cast<short>(2 * p)));
    // Element 32k + l takes bit k of qh[l]: bit 2p for the low half, 2p + 1 for the high.
    hbit[p] = _mm512_sllv_epi16(_mm512_set1_epi16(static_cast<short>(0x0101 << (2 * p))), half);
  }
  for (std::int64_t i = 0; i < nb; ++i) {
    prefetch_ahead<kPrefetchAheadAvx512>(x + i, sizeof(Block));
    // The 12-byte field -> bytes 0..7 = scales, 8..15 = mins (see the AVX2 kernel).
    std::uint32_t u[4];
    std::memcpy(u, x[i].scales, 12);
    u[3] = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4);
    const std::uint32_t mins_lo = u[1] & 0x3f3f3f3fu;
    u[1] = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);
    u[2] = mins_lo;
    u[0] &= 0x3f3f3f3fu;
    const __m128i sm = _mm_loadu_si128(reinterpret_cast<const __m128i*>(u));
    const __m512i sc16 = _mm512_zextsi128_si512(_mm_cvtepu8_epi16(sm));  // 8 scales
    // Each min twice, in line with the 16 bsums (two per 32-element sub-block).
    const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm));
    __m512i hbits = _mm512_setzero_si512();
    if constexpr (kHigh) {
      hbits = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qh)));
    }
    __m512i sumi[2][NT];  // even / odd p: two shorter dependency chains
    for (int t = 0; t < NT; ++t) sumi[0][t] = sumi[1][t] = _mm512_setzero_si512();
    for (int p = 0; p < 4; ++p) {
      __m512i wq = _mm512_broadcast_i64x4(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qs + 32 * p)));
      wq = _mm512_and_si512(_mm512_mask_srli_epi16(wq, 0xFFFF0000u, wq, 4), m4);
      if constexpr (kHigh) {
        wq = _mm512_mask_add_epi8(wq, _mm512_test_epi8_mask(hbits, hbit[p]), wq,
                                  _mm512_set1_epi8(16));
      }
      const __m512i scv = _mm512_permutexvar_epi16(scale_idx[p], sc16);
      for (int t = 0; t < NT; ++t) {
        const __m512i a = _mm512_loadu_si512(y[t][i].qs + 64 * p);
        sumi[p & 1][t] = _mm512_dpwssd_epi32(sumi[p & 1][t], _mm512_maddubs_epi16(wq, a), scv);
      }
    }
    const float dx = h2f(x[i].d), dmx = h2f(x[i].dmin);
    for (int t = 0; t < NT; ++t) {
      const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[t][i].bsums));
      const __m256i prod = _mm256_madd_epi16(mins16, bs);
      const __m512i si = _mm512_add_epi32(sumi[0][t], sumi[1][t]);
      acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(y[t][i].d * dx), _mm512_cvtepi32_ps(si), acc[t]);
      acc_m[t] =
          _mm256_fmadd_ps(_mm256_set1_ps(y[t][i].d * dmx), _mm256_cvtepi32_ps(prod), acc_m[t]);
    }
  }
  for (int t = 0; t < NT; ++t) {
    const __m256 m = acc_m[t];
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    out[t * os] = _mm512_reduce_add_ps(acc[t]) - _mm_cvtss_f32(s);
  }
}

// ---------------------------------------------------------------- Q6_K

template <int NT>
void q6_k(std::int64_t n, const void* w, const void* act, std::size_t as, float* out,
          std::size_t os) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const std::int64_t nb = n / kQK_K;
  const BlockQ8_K* y[NT];
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) {
    y[t] = act_row<BlockQ8_K>(act, as, t);
    acc[t] = _mm512_setzero_ps();
  }
  const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(3);
  // 16-bit lane l of register k (elements 64k..64k+63) belongs to sub-block 4k + l / 8.
  const __m512i sub =
      _mm512_srli_epi16(_mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17,
                                         16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                        3);
  // qh shifts: 0 / 2 for the low / high 256 bits of the first register of a half, 4 / 6 for the
  // second.
  const __m512i sh01 = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
  const __m512i sh23 = _mm512_add_epi16(sh01, _mm512_set1_epi16(4));
  for (std::int64_t i = 0; i < nb; ++i) {
    prefetch_ahead<kPrefetchAheadAvx512>(x + i, sizeof(BlockQ6_K));
    const __m256i sc16 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].scales)));
    __m512i sumi[NT];
    for (int t = 0; t < NT; ++t) sumi[t] = _mm512_setzero_si512();
    for (int h = 0; h < 2; ++h) {
      const __m512i l = _mm512_loadu_si512(x[i].ql + 64 * h);
      const __m512i qh = _mm512_broadcast_i64x4(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qh + 32 * h)));
      // Unsigned 6-bit q (0..63): elements 128h + 0..63, then 128h + 64..127.
      const __m512i q[2] = {
          _mm512_or_si512(_mm512_and_si512(l, m4),
                          _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, sh01), m2), 4)),
          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4),
                          _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, sh23), m2), 4))};
      for (int k = 0; k < 2; ++k) {
        const __m512i scv = _mm512_permutexvar_epi16(
            _mm512_add_epi16(sub, _mm512_set1_epi16(8 * h + 4 * k)), _mm512_zextsi256_si512(sc16));
        for (int t = 0; t < NT; ++t) {
          const __m512i a = _mm512_loadu_si512(y[t][i].qs + 128 * h + 64 * k);
          sumi[t] =
              _mm512_add_epi32(sumi[t], _mm512_madd_epi16(_mm512_maddubs_epi16(q[k], a), scv));
        }
      }
    }
    const float dx = h2f(x[i].d);
    for (int t = 0; t < NT; ++t) {
      // sum sc * (q - 32) . y = sum sc * q . y - 32 * sum sc * bsum (|bsum| <= 16 * 128).
      const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[t][i].bsums));
      const __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(sc16, bs), 5);
      const __m512i s = _mm512_sub_epi32(sumi[t], _mm512_zextsi256_si512(off));
      acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(y[t][i].d * dx), _mm512_cvtepi32_ps(s), acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) out[t * os] = _mm512_reduce_add_ps(acc[t]);
}

// ---------------------------------------------------------------- float weights

// 16 weights as f32; the masked form reads only the lanes in m.
struct LoadF32 {
  static __m512 load(const void* w, std::int64_t k, __mmask16 m) {
    return _mm512_maskz_loadu_ps(m, static_cast<const float*>(w) + k);
  }
};
struct LoadF16 {
  static __m512 load(const void* w, std::int64_t k, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, static_cast<const std::uint16_t*>(w) + k));
  }
};
struct LoadBF16 {
  static __m512 load(const void* w, std::int64_t k, __mmask16 m) {
    const __m256i h = _mm256_maskz_loadu_epi16(m, static_cast<const std::uint16_t*>(w) + k);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
};

// The 16 lanes' sum by a tree fixed here (the one GCC's _mm512_reduce_add_ps
// uses: halves, quarters, then pairs), not left to the compiler: the float
// GEMM (dot_avx512.cpp float_tile) adds its lanes' partial sums in the same
// tree, so a token's row is the same bits in either.
inline float add_lanes(__m512 v) {
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v),
                                 _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  const __m128 p = _mm_add_ps(q, _mm_movehl_ps(q, q));
  // Lane 0 plus lane 1, as _mm_add_ss(p, _mm_movehdup_ps(p)) would give; with
  // that form GCC 12 kept float_block's accumulators in memory, a store per
  // accumulator per step (1B F16 decode at 1 thread +3-6% without them).
  return p[0] + p[1];
}

// R weight rows (row_stride bytes apart) against NT tokens: each row-token
// pair has two independent accumulators, which hide the FMA latency, and the
// same order of sums whatever R and NT (so a row is the same bits in any tile);
// the tail is masked. Tokens share each weight load (decode of several rows
// of one token: float_dot), rows share each activation load (long_rows_*,
// short_rows_*).
// No software prefetch (prefetch.h), unlike the quantized kernels: these
// stream 64 weight bytes per two instructions, fast enough for the hardware
// prefetchers, and on Zen 4 the prefetches cost more than they brought (1B F16
// tg32, 1 thread, alternating: 8.28 / 7.13 tok/s with, 9.04 / 8.99 without;
// 2 threads and the 135M file equal within the noise).
template <class L, int R, int NT>
void float_block(std::int64_t n, const void* w, std::size_t row_stride, const void* act,
                 std::size_t as, float* out, std::size_t os) {
  const char* rows[R];
  const float* a[NT];
  __m512 acc0[R][NT], acc1[R][NT];
  for (int r = 0; r < R; ++r) rows[r] = static_cast<const char*>(w) + r * row_stride;
  for (int t = 0; t < NT; ++t) a[t] = act_row<float>(act, as, t);
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < NT; ++t) acc0[r][t] = acc1[r][t] = _mm512_setzero_ps();
  std::int64_t k = 0;
  for (; k + 32 <= n; k += 32) {
    // A row's weights just before their FMAs: eight rows' 16 weight registers
    // beside 16 accumulators would not fit in 32.
    for (int r = 0; r < R; ++r) {
      const __m512 w0 = L::load(rows[r], k, 0xFFFF), w1 = L::load(rows[r], k + 16, 0xFFFF);
      for (int t = 0; t < NT; ++t) {
        acc0[r][t] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(a[t] + k), acc0[r][t]);
        acc1[r][t] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(a[t] + k + 16), acc1[r][t]);
      }
    }
  }
  for (; k < n; k += 16) {
    const __mmask16 m = n - k >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (n - k)) - 1);
    __m512 w0[R];
    for (int r = 0; r < R; ++r) w0[r] = L::load(rows[r], k, m);
    for (int t = 0; t < NT; ++t) {
      const __m512 a0 = _mm512_maskz_loadu_ps(m, a[t] + k);
      for (int r = 0; r < R; ++r) acc0[r][t] = _mm512_fmadd_ps(w0[r], a0, acc0[r][t]);
    }
  }
  // Unrolled, or GCC 12 keeps the eight-row kernel's accumulators in memory.
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int t = 0; t < NT; ++t) out[t * os + r] = add_lanes(_mm512_add_ps(acc0[r][t], acc1[r][t]));
}

template <class L, int NT>
void float_dot(std::int64_t n, const void* w, const void* act, std::size_t as, float* out,
               std::size_t os) {
  float_block<L, 1, NT>(n, w, 0, act, as, out, os);
}

// ---------------------------------------------------------------- dispatch

// n_act (any count) in tiles of up to 8 (32 registers hold the accumulators
// of 8 tokens), each to its unrolled instantiation.
template <template <int> class K>
void tile(std::int64_t n, const void* w, const void* act, std::size_t as, int n_act, float* out,
          std::size_t os) {
  for_each_tile<8>(act, as, n_act, out, os,
                   [&](auto nt, const void* a, float* o) { K<nt>::run(n, w, a, as, o, os); });
}

template <class L>
struct KFloat {
  template <int NT>
  struct K {
    static void run(std::int64_t n, const void* w, const void* a, std::size_t as, float* o,
                    std::size_t os) {
      float_dot<L, NT>(n, w, a, as, o, os);
    }
  };
};
template <class P>
struct K32 {
  template <int NT>
  struct K {
    static void run(std::int64_t n, const void* w, const void* a, std::size_t as, float* o,
                    std::size_t os) {
      q32<P, NT>(n, w, a, as, o, os);
    }
  };
};
template <class P>
struct K32Rows {
  template <int NT>
  struct K {
    static void run(std::int64_t n, const void* w, const void* a, std::size_t as, float* o,
                    std::size_t os) {
      q32_rows<P, NT>(n, w, a, as, o, os);
    }
  };
};
template <class P>
void rows_dot(std::int64_t n, const void* w, const void* a, std::size_t as, int nt, float* o,
              std::size_t os) {
  tile<K32Rows<P>::template K>(n, w, a, as, nt, o, os);
}
template <class Block, bool kHigh>
struct KK4 {
  template <int NT>
  struct K {
    static void run(std::int64_t n, const void* w, const void* a, std::size_t as, float* o,
                    std::size_t os) {
      k4<Block, kHigh, NT>(n, w, a, as, o, os);
    }
  };
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
  tile<KFloat<LoadF32>::K>(n, w, a, as, nt, o, os);
}
void f16_f32(std::int64_t n, const void* w, const void* a, std::size_t as, int nt, float* o,
             std::size_t os) {
  tile<KFloat<LoadF16>::K>(n, w, a, as, nt, o, os);
}
void bf16_f32(std::int64_t n, const void* w, const void* a, std::size_t as, int nt, float* o,
              std::size_t os) {
  tile<KFloat<LoadBF16>::K>(n, w, a, as, nt, o, os);
}
// Float rows of one token (dot.h FloatRows). kLongRowRows for rows of kLongRow
// and more: there the f32 activations (32 KiB at 8,192) crowd out of L1 the weights
// streaming through it, and a loop like float_dot's read F16 rows of 8,192 at
// 10-14 GB/s, four rows at once 16-18 (Zen 4, 1 thread; rows of 2,048: 25-31
// one row at a time, 17 four). Eight rows (16 accumulators) halve the
// activation reads again: 1B F16 tg64 at 1 thread 11.6 -> 12.2 tok/s.
// kShortRowRows for the rest: two rows far apart (matmul.cpp) are two streams
// for the prefetchers, which one core's bandwidth needs (1B F16 tg64, 1 thread:
// 11.7 -> 12.6 tok/s; four rows no better; two adjacent rows of 2,048 6.8).
void long_rows_f32(std::int64_t n, const void* w, std::size_t rs, const void* a, float* o) {
  float_block<LoadF32, kLongRowRows, 1>(n, w, rs, a, 0, o, 0);
}
void short_rows_f32(std::int64_t n, const void* w, std::size_t rs, const void* a, float* o) {
  float_block<LoadF32, kShortRowRows, 1>(n, w, rs, a, 0, o, 0);
}
void long_rows_f16(std::int64_t n, const void* w, std::size_t rs, const void* a, float* o) {
  float_block<LoadF16, kLongRowRows, 1>(n, w, rs, a, 0, o, 0);
}
void short_rows_f16(std::int64_t n, const void* w, std::size_t rs, const void* a, float* o) {
  float_block<LoadF16, kShortRowRows, 1>(n, w, rs, a, 0, o, 0);
}
void long_rows_bf16(std::int64_t n, const void* w, std::size_t rs, const void* a, float* o) {
  float_block<LoadBF16, kLongRowRows, 1>(n, w, rs, a, 0, o, 0);
}
void short_rows_bf16(std::int64_t n, const void* w, std::size_t rs, const void* a, float* o) {
  float_block<LoadBF16, kShortRowRows, 1>(n, w, rs, a, 0, o, 0);
}
void q4_0_q8_0(std::int64_t n, const void* w, const void* a, std::size_t as, int nt, float* o,
               std::size_t os) {
  tile<K32<PQ4_0>::K>(n, w, a, as, nt, o, os);
}
void q5_0_q8_0(std::int64_t n, const void* w, const void* a, std::size_t as, int nt, float* o,
               std::size_t os) {
  tile<K32<PQ5_0>::K>(n, w, a, as, nt, o, os);
}
void q8_0_q8_0(std::int64_t n, const void* w, const void* a, std::size_t as, int nt, float* o,
               std::size_t os) {
  tile<K32<PQ8_0>::K>(n, w, a, as, nt, o, os);
}
void iq4_nl_q8_0(std::int64_t n, const void* w, const void* a, std::size_t as, int nt, float* o,
                 std::size_t os) {
  tile<K32<PIQ4_NL>::K>(n, w, a, as, nt, o, os);
}
void q4_k_q8_k(std::int64_t n, const void* w, const void* a, std::size_t as, int nt, float* o,
               std::size_t os) {
  tile<KK4<BlockQ4_K, false>::K>(n, w, a, as, nt, o, os);
}
void q5_k_q8_k(std::int64_t n, const void* w, const void* a, std::size_t as, int nt, float* o,
               std::size_t os) {
  tile<KK4<BlockQ5_K, true>::K>(n, w, a, as, nt, o, os);
}
void q6_k_q8_k(std::int64_t n, const void* w, const void* a, std::size_t as, int nt, float* o,
               std::size_t os) {
  tile<KQ6_K>(n, w, a, as, nt, o, os);
}

// Constant-initialized: no start-up code runs in this unit.
template <class P>
constexpr RowFns row_fns() {
  return {row_act_bytes<P>, row_prepare<P>, rows_dot<P>, q32_rows_multi<P>};
}
constinit const RowFns rows_q4_0 = row_fns<PQ4_0>();
constinit const RowFns rows_q5_0 = row_fns<PQ5_0>();
constinit const RowFns rows_q8_0 = row_fns<PQ8_0>();
constinit const RowFns rows_iq4_nl = row_fns<PIQ4_NL>();

}  // namespace seam::dot::avx512
