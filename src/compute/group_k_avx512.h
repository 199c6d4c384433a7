// Reading the groups (interleave.h) with AVX-512, row r of the 16
// in 32-bit lane r (or in bytes 4r..4r+3): shared by the decode kernels
// (group_k_avx512.cpp, group32_avx512.cpp) and the GEMM's panels packed from groups
// (dot_avx512.cpp). Included only by units compiled with the AVX-512 flags;
// `static` keeps each unit's copy its own (dot.h).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "compute/interleave.h"
#include "compute/quant_blocks.h"

namespace seam::dot::avx512::group_k {

// 16 fp16 values at p as f32.
static inline __m512 half16(const std::byte* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// MXFP4's E8M0 exponents, one per int32 lane, as quant::mxfp4_scale's floats
// (2^(e - 128); e < 2: the subnormals 2^-128, 2^-127).
static inline __m512 mxfp4_scales(__m512i e) {
  const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
  const __m512i tiny = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
  const __mmask16 below2 = _mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2));
  return _mm512_castsi512_ps(_mm512_mask_blend_epi32(below2, normal, tiny));
}

// A 32-element type's group block (interleave.h) at blk: its 16 rows' scales
// (MXFP4: 2^(e - 128) from the exponent bytes), mins (Q4_1, Q5_1), and the
// 16-entry codebook its 4-bit values index (IQ4_NL, MXFP4) in every 128-bit lane.
template <TensorType T>
static inline __m512 b32_scales(const std::byte* blk) {
  if constexpr (T == TensorType::MXFP4)
    return mxfp4_scales(
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk))));
  return half16(blk);
}
static inline __m512 b32_mins(const std::byte* blk) { return half16(blk + interleave::kB32Min); }
template <TensorType T>
static inline __m512i b32_codebook_lanes() {
  return _mm512_broadcast_i32x4(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(interleave::b32_codebook(T))));
}

// 16 rows' 4-bit fields packed in 8 bytes at p (row r in byte r % 8, at bit
// 4 (r / 8)): row r's in byte r, or in int32 lane r.
static inline __m128i row_nibble_bytes(const std::byte* p) {
  const __m128i nib = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  const __m128i low = _mm_set1_epi8(0x0F);
  return _mm_unpacklo_epi64(_mm_and_si128(nib, low), _mm_and_si128(_mm_srli_epi16(nib, 4), low));
}
static inline __m512i row_nibbles(const std::byte* p) {
  return _mm512_cvtepu8_epi32(row_nibble_bytes(p));
}

// Sub-block j (0..7) of a Q4_K group block: the 6-bit scales and mins. A min's
// top 2 bits are bits 6-7 of the scale's byte; its low nibble is one of
// row_nibbles at kQ4KMinLow + 8j. Both are put together as bytes in 128-bit
// registers and widened once each: on Zen 4, whose 512-bit operations take
// two of its 256-bit pipes, the widened forms cost twice as much per step.
static inline void q4_k_scale_min(const std::byte* blk, int j, __m512i& sc, __m512i& mn) {
  const __m128i s =
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + interleave::kQ4KScales + 16 * j));
  const __m128i min_low = row_nibble_bytes(blk + interleave::kQ4KMinLow + 8 * j);
  // Bits 6-7 of each byte to bits 4-5 (a 16-bit shift by 2: what comes down
  // from the next byte lands in bits 6-7, which the mask drops).
  const __m128i min_top = _mm_and_si128(_mm_srli_epi16(s, 2), _mm_set1_epi8(0x30));
  sc = _mm512_cvtepu8_epi32(_mm_and_si128(s, _mm_set1_epi8(63)));
  mn = _mm512_cvtepu8_epi32(_mm_or_si128(min_low, min_top));
}

// Step m (elements 4m..4m+3) of Q5_K sub-block pair p in a group block, given
// its nibbles lo (sub-block 2p) and hi (2p + 1) as bytes 0..15: adds 16 where
// the fifth bit is set. Byte i of row r's dword in the step's qh bytes holds
// bit j for sub-block j's element 4m + i.
static inline void q5_k_add_fifth(const std::byte* blk, int p, int m, __m512i& lo, __m512i& hi) {
  const __m512i h = _mm512_loadu_si512(blk + interleave::kQ5KHigh + 64 * m);
  const __m512i sixteen = _mm512_set1_epi8(16);
  const __mmask64 lo_bits =
      _mm512_test_epi8_mask(h, _mm512_set1_epi8(static_cast<char>(1 << 2 * p)));
  const __mmask64 hi_bits =
      _mm512_test_epi8_mask(h, _mm512_set1_epi8(static_cast<char>(2 << 2 * p)));
  lo = _mm512_mask_add_epi8(lo, lo_bits, lo, sixteen);
  hi = _mm512_mask_add_epi8(hi, hi_bits, hi, sixteen);
}

// Unit u (elements 16u..16u+15) of a Q2_K group block: q[s] holds the 2-bit
// values (x = d * sc * q - dmin * mn) of elements 16u + 4s .. + 3, at bit 2s
// of the unit's bytes.
static inline void q2_k_unit(const std::byte* blk, int u, __m512i q[4]) {
  const __m512i v = _mm512_loadu_si512(blk + interleave::kQ2KValues + 64 * u);
  for (int s = 0; s < 4; ++s)
    q[s] = _mm512_and_si512(_mm512_srli_epi16(v, 2 * s), _mm512_set1_epi8(3));
}

// Unit u's 4-bit scales (sc) and mins (mn) of a Q2_K group block.
static inline void q2_k_scale_min(const std::byte* blk, int u, __m512i& sc, __m512i& mn) {
  const __m512i b = _mm512_cvtepu8_epi32(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + interleave::kQ2KScales + 16 * u)));
  sc = _mm512_and_si512(b, _mm512_set1_epi32(15));
  mn = _mm512_srli_epi32(b, 4);
}

// Unit u (elements 16u..16u+15) of a Q3_K group block: q[s] holds the
// unsigned 3-bit values (0..7, x = d * (sc - 32) * (q - 4)) of elements
// 16u + 4s .. + 3: the 2-bit field at bit 2s of the unit's bytes (Q2_K's
// layout), plus 4 where bit u / 2 of hmask step 4 (u % 2) + s is set.
static inline void q3_k_unit(const std::byte* blk, int u, __m512i q[4]) {
  const __m512i v = _mm512_loadu_si512(blk + interleave::kQ3KValues + 64 * u);
  const __m512i three = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4);
  const __m512i bit = _mm512_set1_epi8(static_cast<char>(1 << (u / 2)));
  for (int s = 0; s < 4; ++s) {
    const __m512i hm = _mm512_loadu_si512(blk + interleave::kQ3KMask + 64 * (4 * (u % 2) + s));
    const __m512i x = _mm512_and_si512(_mm512_srli_epi16(v, 2 * s), three);
    q[s] = _mm512_mask_add_epi8(x, _mm512_test_epi8_mask(hm, bit), x, four);
  }
}

// Unit u's 6-bit scales minus 32 (signed) in a Q3_K or IQ4_XS group block:
// the low nibbles are row_nibbles at `low` + 8u, the top bits of row r at bit
// 2r of the unit's word at `high` + 4u.
static inline __m512i scales6(const std::byte* blk, std::size_t low, std::size_t high, int u) {
  const __m512i lo = row_nibbles(blk + low + 8 * u);
  std::int32_t word;
  std::memcpy(&word, blk + high + 4 * u, 4);
  const __m512i shifts =
      _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i hi =
      _mm512_and_si512(_mm512_srlv_epi32(_mm512_set1_epi32(word), shifts), _mm512_set1_epi32(3));
  return _mm512_sub_epi32(_mm512_or_si512(lo, _mm512_slli_epi32(hi, 4)), _mm512_set1_epi32(32));
}

// Sub-block j (elements 32j..32j+31) of an IQ4_XS group block: the codebook
// values of elements 32j + 4m .. + 3 in lo[m] and of 32j + 16 + 4m .. in
// hi[m] (Q4_0's nibble layout), each XOR 0x80 when `biased` (v + 128,
// unsigned, for vpdpbusd's unsigned operand).
static inline void iq4_xs_unit(const std::byte* blk, int j, bool biased, __m512i lo[4],
                               __m512i hi[4]) {
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  __m512i table =
      _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kIQ4Values)));
  if (biased) table = _mm512_xor_si512(table, _mm512_set1_epi8(static_cast<char>(0x80)));
  for (int m = 0; m < 4; ++m) {
    const __m512i v = _mm512_loadu_si512(blk + interleave::kXSValues + 64 * (4 * j + m));
    lo[m] = _mm512_shuffle_epi8(table, _mm512_and_si512(v, m4));
    hi[m] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(v, 4), m4));
  }
}

// (c & a) | (~c & b) per bit: vpternlogd's table for "c ? a : b".
static inline __m512i select_bits(__m512i a, __m512i b, __m512i c) {
  return _mm512_ternarylogic_epi32(a, b, c, 0xE4);
}

// Unit u (elements 16u..16u+15) of a Q6_K group block: q[s] holds the
// unsigned 6-bit values (0..63, x = d * sc * (q - 32)) of elements 16u + 4s ..
// + 3. lo[m] holds step m's low 4 bits | step m + 2's << 4, hi step s's top 2
// bits at bit 2s: ha has steps 0 and 2 at bits 0 and 4, hb steps 1 and 3, and
// select_bits keeps each byte's low nibble from its first operand (the 16-bit
// shifts spill bits only into the part it drops).
static inline void q6_k_unit(const std::byte* blk, int u, __m512i q[4]) {
  const std::byte* unit = blk + interleave::kQ6KValues + interleave::kQ6KUnit * u;
  const __m512i lo0 = _mm512_loadu_si512(unit), lo1 = _mm512_loadu_si512(unit + 64);
  const __m512i hi = _mm512_loadu_si512(unit + interleave::kQ6KHigh);
  const __m512i low = _mm512_set1_epi8(0x0F), two_bits = _mm512_set1_epi8(0x33);
  const __m512i ha = _mm512_and_si512(hi, two_bits);
  const __m512i hb = _mm512_and_si512(_mm512_srli_epi16(hi, 2), two_bits);
  q[0] = select_bits(lo0, _mm512_slli_epi16(ha, 4), low);
  q[1] = select_bits(lo1, _mm512_slli_epi16(hb, 4), low);
  q[2] = select_bits(_mm512_srli_epi16(lo0, 4), ha, low);
  q[3] = select_bits(_mm512_srli_epi16(lo1, 4), hb, low);
}

// Unit u's int8 scales, sign-extended.
static inline __m512i q6_k_scales(const std::byte* blk, int u) {
  return _mm512_cvtepi8_epi32(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + interleave::kQ6KScales + 16 * u)));
}

// The 16-element unit types' value offset: x = scale * (q - offset) (+ min).
template <TensorType T>
constexpr int k16_offset() {
  return T == TensorType::Q6_K ? 32 : T == TensorType::Q3_K ? 4 : 0;
}

// The block's -dmin, which Q2_K's mins are scaled by (zero for Q3_K, Q6_K).
template <TensorType T>
static inline __m512 k16_neg_dmin(const std::byte* blk) {
  if constexpr (T != TensorType::Q2_K) return _mm512_setzero_ps();
  return _mm512_sub_ps(_mm512_setzero_ps(), half16(blk + interleave::kQ2KDmin));
}

// Unit u of a Q2_K, Q3_K or Q6_K group block as the decode kernel and the
// GEMM's panel both take it: the unsigned values q[4] (their offset
// k16_offset is taken off through the token's sum over the unit), the scale
// d * sc and, for Q2_K, the min -dmin * mn (zero otherwise); d and neg_dmin
// are the block's (half16, k16_neg_dmin).
template <TensorType T>
static inline void k16_unit(const std::byte* blk, int u, __m512 d, __m512 neg_dmin, __m512i q[4],
                            __m512& sc, __m512& mn) {
  mn = _mm512_setzero_ps();
  if constexpr (T == TensorType::Q6_K) {
    q6_k_unit(blk, u, q);
    sc = _mm512_mul_ps(d, _mm512_cvtepi32_ps(q6_k_scales(blk, u)));
  } else if constexpr (T == TensorType::Q2_K) {
    q2_k_unit(blk, u, q);
    __m512i isc, imn;
    q2_k_scale_min(blk, u, isc, imn);
    sc = _mm512_mul_ps(d, _mm512_cvtepi32_ps(isc));
    mn = _mm512_mul_ps(neg_dmin, _mm512_cvtepi32_ps(imn));
  } else {
    q3_k_unit(blk, u, q);
    sc = _mm512_mul_ps(d, _mm512_cvtepi32_ps(scales6(blk, interleave::kQ3KScaleLow,
                                                     interleave::kQ3KScaleHigh, u)));
  }
}

}  // namespace seam::dot::avx512::group_k
