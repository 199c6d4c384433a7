// AVX-512 decode of the K-quants (Q2_K to Q6_K) interleaved 16 rows at a time
// (interleave.h): the bulk of the Q2_K to Q5_K_M files, the most common
// downloads.
// In the file's layout each 144-byte Q4_K row block costs its own scale
// unpacking, shuffles and a horizontal reduction (dot_rows_avx512.cpp's k4);
// here each int32 lane of a 512-bit register is one of the 16 rows, so one
// 64-byte load feeds vpdpbusd with 4 elements of every row, a sub-block's 16
// scales are one load, and nothing is reduced across lanes.
// Compiled with the AVX-512 flags (CMakeLists.txt); see dot.h on keeping this
// unit's code out of baseline callers.
//
// Arithmetic, per sub-block and token, in the AVX-512 GEMM's order
// (dot_avx512.cpp tile on the panels pack16_k16 .. pack16_iq4_xs make), so that a
// token's row is the same bits decoded here alone or in a prefill batch there
// (docs/server.md, "Batch invariance"):
//  - Q4_K: isum_j = sum q * a over sub-block j, exact (vpdpbusd: unsigned
//    nibbles, signed activations; high nibbles in place, their sums a multiple
//    of 16 shifted down exactly); per super-block, from 0: s += isum_j * (d *
//    sc_j), then s += (-dmin * mn_j) * asum_j (asum_j: the token's sum over
//    sub-block j); then acc += s * da. Q5_K: the same with 5-bit values.
//  - Q6_K: isum_u = sum (q - 32) * a over 16-element unit u, exact (q unsigned
//    0..63 into vpdpbusd, the accumulator starting at -32 * asum_u); s +=
//    isum_u * (d * sc_u); then acc += s * da. Q3_K: the same with q 0..7 and
//    4 for 32, sc_u its signed scale; Q2_K: q 0..3, no offset, and after
//    each unit s += (-dmin * mn_u) * asum_u.
// d * sc and dmin * mn are exact in f32 (an fp16 times a 6- or 8-bit integer).
//
// GCC 12's AVX-512 headers self-initialize their "undefined" vectors
// (__m512 __Y = __Y), which -W(maybe-)uninitialized reports once inlined here.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "compute/dot.h"
#include "compute/dot_tile.h"
#include "compute/group_k_avx512.h"
#include "compute/interleave.h"
#include "compute/prefetch.h"
#include "compute/quant_blocks.h"

namespace seam::dot::avx512 {
namespace {

using namespace seam::quant;

// Prepared token (64-byte rounded): int8 q[n] | f32 d[n / 256] | int16
// s16[n / 16] (sums of 16 values, Q8_K's bsums) | f32 s32[n / 32] (sums of
// 32, as floats: Q4_K and Q5_K meet each with one broadcast load).
struct ActLayout {
  std::size_t d, s16, s32, bytes;
  explicit ActLayout(std::int64_t n) {
    const auto un = static_cast<std::size_t>(n);
    d = un;
    s16 = d + un / kQK_K * 4;
    s32 = s16 + un / 16 * 2;
    bytes = (s32 + un / 32 * 4 + 63) / 64 * 64;
  }
};

std::size_t act_bytes(std::int64_t n) { return ActLayout(n).bytes; }

void prepare(std::int64_t n, const void* act, void* dst) {
  const ActLayout L(n);
  const auto* y = static_cast<const BlockQ8_K*>(act);
  auto* out = static_cast<std::byte*>(dst);
  auto* d = reinterpret_cast<float*>(out + L.d);
  auto* s16 = reinterpret_cast<std::int16_t*>(out + L.s16);
  auto* s32 = reinterpret_cast<float*>(out + L.s32);
  for (std::int64_t i = 0; i < n / kQK_K; ++i) {
    std::memcpy(out + kQK_K * i, y[i].qs, kQK_K);
    d[i] = y[i].d;
    std::memcpy(s16 + 16 * i, y[i].bsums, sizeof y[i].bsums);
    for (int j = 0; j < 8; ++j)
      s32[8 * i + j] = static_cast<float>(y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
  }
}

// One prepared token's parts.
struct Token {
  const std::int8_t* q = nullptr;
  const float* d = nullptr;
  const std::int16_t* s16 = nullptr;
  const float* s32 = nullptr;
  // The token's sum over 32-element sub-block j of super-block i.
  std::int32_t sum32(std::int64_t i, int j) const {
    return s16[16 * i + 2 * j] + s16[16 * i + 2 * j + 1];
  }
};

Token token_at(const ActLayout& L, const std::byte* a) {
  return {reinterpret_cast<const std::int8_t*>(a), reinterpret_cast<const float*>(a + L.d),
          reinterpret_cast<const std::int16_t*>(a + L.s16),
          reinterpret_cast<const float*>(a + L.s32)};
}

inline __m512i broadcast4(const void* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// Software prefetch. Q4_K, Q5_K, Q6_K and IQ4_XS read each block front to
// back, a stream the hardware prefetchers keep up with alone; prefetches 8 KiB
// ahead as well cost them (1B decode, Zen 4, 1 thread, tok/s with -> without:
// Q5_K_M 24.1 -> 36.0, Q4_K_M 38.5 -> 41.2, Q6_K 28.6 -> 30.8; docs/
// performance.md, stop 51). Q3_K, bound by its 3-bit unpacking, still gains
// from them (Q3_K_M 40.1 with, 38.0 without): it reads all of its hmask with a
// block's first units, so it asks kBlocksAhead whole blocks ahead; Q2_K, whose
// blocks are as short, the same way.
constexpr int kBlocksAhead = 2;

// Q4_K, or Q5_K (kQ5: each nibble's fifth bit from the group's qh steps).
template <int NT, bool kQ5>
void q4_k_tile(std::int64_t n, const std::byte* group, const Token* tok, float* out,
               std::size_t os) {
  constexpr TensorType kType = kQ5 ? TensorType::Q5_K : TensorType::Q4_K;
  constexpr std::size_t kBlock = interleave::block_bytes(kType);
  constexpr std::size_t kValues = interleave::k4_values(kType);
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  const __m512i low = _mm512_set1_epi8(0x0F), high = _mm512_set1_epi8(static_cast<char>(0xF0));
  for (std::int64_t i = 0; i < n / kQK_K; ++i) {
    const std::byte* blk = group + i * kBlock;
    const __m512 d = group_k::half16(blk);
    const __m512 neg_dmin =
        _mm512_sub_ps(_mm512_setzero_ps(), group_k::half16(blk + interleave::kQ4KDmin));
    __m512 s[NT];
    for (int t = 0; t < NT; ++t) s[t] = _mm512_setzero_ps();
    for (int p = 0; p < 4; ++p) {
      __m512i lo[NT], hi[NT];
      for (int t = 0; t < NT; ++t) lo[t] = hi[t] = _mm512_setzero_si512();
      for (int m = 0; m < 8; ++m) {
        const __m512i v = _mm512_loadu_si512(blk + kValues + 64 * (8 * p + m));
        __m512i vl = _mm512_and_si512(v, low), vh;
        if constexpr (kQ5) {  // 5-bit values do not fit in place: the high ones shifted down
          vh = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
          group_k::q5_k_add_fifth(blk, p, m, vl, vh);
        } else {
          vh = _mm512_and_si512(v, high);
        }
        for (int t = 0; t < NT; ++t) {
          const std::int8_t* a = tok[t].q + kQK_K * i + 64 * p + 4 * m;
          lo[t] = _mm512_dpbusd_epi32(lo[t], vl, broadcast4(a));
          hi[t] = _mm512_dpbusd_epi32(hi[t], vh, broadcast4(a + 32));
        }
      }
      __m512 sc[2], mn[2];
      for (int h = 0; h < 2; ++h) {
        __m512i isc, imn;
        group_k::q4_k_scale_min(blk, 2 * p + h, isc, imn);
        sc[h] = _mm512_mul_ps(d, _mm512_cvtepi32_ps(isc));
        mn[h] = _mm512_mul_ps(neg_dmin, _mm512_cvtepi32_ps(imn));
      }
      for (int t = 0; t < NT; ++t) {
        const __m512i isum[2] = {lo[t], kQ5 ? hi[t] : _mm512_srai_epi32(hi[t], 4)};
        for (int h = 0; h < 2; ++h) {
          s[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[h]), sc[h], s[t]);
          s[t] = _mm512_fmadd_ps(mn[h], _mm512_set1_ps(tok[t].s32[8 * i + 2 * p + h]), s[t]);
        }
      }
    }
    for (int t = 0; t < NT; ++t)
      acc[t] = _mm512_fmadd_ps(s[t], _mm512_set1_ps(tok[t].d[i]), acc[t]);
  }
  for (int t = 0; t < NT; ++t) _mm512_storeu_ps(out + t * os, acc[t]);
}

// Q6_K, Q3_K or Q2_K: 16-element units of unsigned values, with an offset
// (32, 4; none for Q2_K) taken off through the token's sum over the unit, and
// for Q2_K a min met by that sum.
template <int NT, TensorType T>
void k16_tile(std::int64_t n, const std::byte* group, const Token* tok, float* out,
              std::size_t os) {
  constexpr bool kQ6 = T == TensorType::Q6_K, kQ2 = T == TensorType::Q2_K;
  constexpr std::size_t kBlock = interleave::block_bytes(T);
  constexpr int kOffset = group_k::k16_offset<T>();
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  for (std::int64_t i = 0; i < n / kQK_K; ++i) {
    const std::byte* blk = group + i * kBlock;
    const __m512 d = group_k::half16(blk), neg_dmin = group_k::k16_neg_dmin<T>(blk);
    __m512 s[NT];
    for (int t = 0; t < NT; ++t) s[t] = _mm512_setzero_ps();
    for (int u = 0; u < 16; ++u) {
      // Q3_K and Q2_K: kBlocksAhead whole blocks ahead, a sixteenth per unit.
      if constexpr (!kQ6)
        prefetch_range(blk + kBlocksAhead * kBlock + kBlock * u / 16, kBlock / 16);
      __m512i q[4];
      __m512 sc, mn;
      group_k::k16_unit<T>(blk, u, d, neg_dmin, q, sc, mn);
      for (int t = 0; t < NT; ++t) {
        const std::int8_t* a = tok[t].q + kQK_K * i + 16 * u;
        const std::int32_t asum = tok[t].s16[16 * i + u];
        __m512i isum = _mm512_set1_epi32(-kOffset * asum);
        for (int k = 0; k < 4; ++k) isum = _mm512_dpbusd_epi32(isum, q[k], broadcast4(a + 4 * k));
        s[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), sc, s[t]);
        if constexpr (kQ2)
          s[t] = _mm512_fmadd_ps(mn, _mm512_set1_ps(static_cast<float>(asum)), s[t]);
      }
    }
    for (int t = 0; t < NT; ++t)
      acc[t] = _mm512_fmadd_ps(s[t], _mm512_set1_ps(tok[t].d[i]), acc[t]);
  }
  for (int t = 0; t < NT; ++t) _mm512_storeu_ps(out + t * os, acc[t]);
}

// IQ4_XS: isum_j = sum v * a over sub-block j, exact (v + 128 into vpdpbusd,
// the accumulator starting at -128 * asum_j); s += isum_j * (d * sc_j); then
// acc += s * da, the GEMM's order for 32-element units without a min.
template <int NT>
void iq4_xs_tile(std::int64_t n, const std::byte* group, const Token* tok, float* out,
                 std::size_t os) {
  constexpr std::size_t kBlock = interleave::block_bytes(TensorType::IQ4_XS);
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  for (std::int64_t i = 0; i < n / kQK_K; ++i) {
    const std::byte* blk = group + i * kBlock;
    const __m512 d = group_k::half16(blk);
    __m512 s[NT];
    for (int t = 0; t < NT; ++t) s[t] = _mm512_setzero_ps();
    for (int j = 0; j < 8; ++j) {
      __m512i lo[4], hi[4];
      group_k::iq4_xs_unit(blk, j, true, lo, hi);
      const __m512 sc =
          _mm512_mul_ps(d, _mm512_cvtepi32_ps(group_k::scales6(blk, interleave::kXSScaleLow,
                                                               interleave::kXSScaleHigh, j)));
      for (int t = 0; t < NT; ++t) {
        const std::int8_t* a = tok[t].q + kQK_K * i + 32 * j;
        __m512i isum = _mm512_set1_epi32(-128 * tok[t].sum32(i, j));
        for (int m = 0; m < 4; ++m) {
          isum = _mm512_dpbusd_epi32(isum, lo[m], broadcast4(a + 4 * m));
          isum = _mm512_dpbusd_epi32(isum, hi[m], broadcast4(a + 16 + 4 * m));
        }
        s[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), sc, s[t]);
      }
    }
    for (int t = 0; t < NT; ++t)
      acc[t] = _mm512_fmadd_ps(s[t], _mm512_set1_ps(tok[t].d[i]), acc[t]);
  }
  for (int t = 0; t < NT; ++t) _mm512_storeu_ps(out + t * os, acc[t]);
}

// dot.h GroupFn: four tokens at most per pass.
template <TensorType T>
void group_dot(std::int64_t n, const void* group, const void* act, std::size_t as, int n_act,
               float* out, std::size_t os) {
  const ActLayout L(n);
  for_each_tile<4>(act, as, n_act, out, os, [&](auto nt, const void* a, float* o) {
    Token tok[decltype(nt)::value];
    for (int t = 0; t < nt; ++t) tok[t] = token_at(L, static_cast<const std::byte*>(a) + t * as);
    const auto* g = static_cast<const std::byte*>(group);
    if constexpr (T == TensorType::Q4_K || T == TensorType::Q5_K)
      q4_k_tile<nt, T == TensorType::Q5_K>(n, g, tok, o, os);
    else if constexpr (T == TensorType::IQ4_XS)
      iq4_xs_tile<nt>(n, g, tok, o, os);
    else
      k16_tile<nt, T>(n, g, tok, o, os);
  });
}

// The group kernel's RowFns: Q8_K activations prepared as above.
constexpr RowFns group_fns(GroupFn dot16) { return {act_bytes, prepare, nullptr, nullptr, dot16}; }

}  // namespace

constinit const RowFns rows_iq4_xs_16 = group_fns(group_dot<TensorType::IQ4_XS>);
constinit const RowFns rows_q2_k_16 = group_fns(group_dot<TensorType::Q2_K>);
constinit const RowFns rows_q3_k_16 = group_fns(group_dot<TensorType::Q3_K>);
constinit const RowFns rows_q4_k_16 = group_fns(group_dot<TensorType::Q4_K>);
constinit const RowFns rows_q5_k_16 = group_fns(group_dot<TensorType::Q5_K>);
constinit const RowFns rows_q6_k_16 = group_fns(group_dot<TensorType::Q6_K>);

}  // namespace seam::dot::avx512
