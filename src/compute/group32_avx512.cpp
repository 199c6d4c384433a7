// AVX-512 decode of the 32-element block types interleaved 16 rows at a time
// (interleave.h): Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4 and Q8_0. Q5_0, Q5_1
// and IQ4_NL are what the K-quant mixes store rows in that are not whole
// super-blocks (every matrix of a 576- or 896-wide model but the FFN's down
// projection), Q4_0 and Q8_0 whole files, MXFP4 gpt-oss's experts.
// One 64-byte load holds 4 bytes of each of the 16 rows, so every int32 lane
// of vpdpbusd is one row, a block's 16 scales are one load, and the token's
// 4-byte steps are broadcast; nothing is reduced across lanes.
// Compiled with the AVX-512 flags (CMakeLists.txt); see dot.h on keeping this
// unit's code out of baseline callers.
//
// Arithmetic, per block and token, in the AVX-512 GEMM's order (dot_avx512.cpp
// tile on the panels pack16 makes), so that a token's row is the same bits
// decoded here alone or in a prefill batch there (docs/server.md, "Batch
// invariance"): isum = sum w * a over the block, exact; acc += (isum * d) * da,
// the product rounded before the fused multiply-add; Q4_1 and Q5_1 then
// acc += m * s (s: the Q8_1 block's d * sum a).
// vpdpbusd multiplies unsigned by signed bytes: the weights go in unsigned (q
// for Q4_0 and Q5_0, whose -8 / -16 comes back as -8 / -16 * sum a, one int32
// per block the tokens' preparation stores; the codebook + 128 for IQ4_NL and
// MXFP4, -128 * sum a; Q4_1's and Q5_1's q as they are), the activations signed.
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
#include <type_traits>

#include "compute/dot.h"
#include "compute/dot_tile.h"
#include "compute/group_k_avx512.h"
#include "compute/interleave.h"
#include "compute/prefetch.h"
#include "compute/quant_blocks.h"

namespace seam::dot::avx512 {
namespace {

using namespace seam::quant;

std::size_t round64(std::size_t b) { return (b + 63) / 64 * 64; }

inline __m512i broadcast4(const std::int8_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// A block's f32 step in the GEMM's order: the exact integer sum times the
// weights' scale, rounded, then times the token's into the accumulator.
inline __m512 gemm_block_step(__m512i isum, __m512 dw, float da, __m512 acc) {
  return _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(isum), dw), _mm512_set1_ps(da), acc);
}

// ---------------------------------------------------------------- 4- and 5-bit types

// kOff: what the unsigned weight exceeds the value by (the per-block
// correction -kOff * sum a); kMin: Q8_1 activations and a min per row;
// kFifth: 5-bit values; kTable: IQ4_NL's or MXFP4's codebook.
template <TensorType T>
struct Nibbles {
  static constexpr bool kMin = interleave::b32_has_min(T);
  static constexpr bool kFifth = interleave::b32_has_fifth(T);
  static constexpr bool kTable = interleave::b32_has_codebook(T);
  static constexpr int kOff = T == TensorType::Q4_0   ? 8
                              : T == TensorType::Q5_0 ? 16
                              : kTable                ? 128
                                                      : 0;
  // High nibbles kept in place (16 q) where nothing is added to them or looked
  // up: their sums are multiples of 16 and shift down exactly.
  static constexpr bool kHighInPlace = !kFifth && !kTable;
  static constexpr std::size_t kBlock = interleave::block_bytes(T);
  static constexpr std::size_t kValues = interleave::b32_values(T);
  using ActBlock = std::conditional_t<kMin, BlockQ8_1, BlockQ8_0>;

  // Block `blk`'s unsigned weights: lo[m] elements 4m..4m+3 of each row, hi[m]
  // 16 + 4m.. (16 times theirs where kHighInPlace).
  static void weights(const std::byte* blk, __m512i lo[4], __m512i hi[4]) {
    const __m512i low = _mm512_set1_epi8(0x0F);
    __m512i fifth = _mm512_setzero_si512(), table = _mm512_setzero_si512();
    if constexpr (kFifth) fifth = _mm512_loadu_si512(blk + interleave::b32_high(T));
    if constexpr (kTable) {
      table = _mm512_xor_si512(group_k::b32_codebook_lanes<T>(),
                               _mm512_set1_epi8(static_cast<char>(0x80)));
    }
    for (int m = 0; m < 4; ++m) {
      const __m512i v = _mm512_loadu_si512(blk + kValues + 64 * m);
      lo[m] = _mm512_and_si512(v, low);
      hi[m] = kHighInPlace ? _mm512_andnot_si512(low, v)
                           : _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
      if constexpr (kFifth) {
        // Byte i of a row's word holds element 4s + i's fifth bit at bit s.
        const __m512i sixteen = _mm512_set1_epi8(16);
        lo[m] = _mm512_mask_add_epi8(
            lo[m], _mm512_test_epi8_mask(fifth, _mm512_set1_epi8(static_cast<char>(1 << m))), lo[m],
            sixteen);
        hi[m] = _mm512_mask_add_epi8(
            hi[m], _mm512_test_epi8_mask(fifth, _mm512_set1_epi8(static_cast<char>(16 << m))),
            hi[m], sixteen);
      }
      if constexpr (kTable) {
        lo[m] = _mm512_shuffle_epi8(table, lo[m]);
        hi[m] = _mm512_shuffle_epi8(table, hi[m]);
      }
    }
  }
};

// Prepared token, 64-byte rounded: int8 a[n] | int32 neg[n / 32] (-kOff * the
// block's sum) | f32 d[n / 32] | f32 s[n / 32] (kMin: the Q8_1 block's s).
template <TensorType T>
std::size_t nibbles_act_bytes(std::int64_t n) {
  const auto un = static_cast<std::size_t>(n);
  return round64(un + un / 32 * (Nibbles<T>::kMin ? 12 : 8));
}

template <TensorType T>
void nibbles_prepare(std::int64_t n, const void* act, void* dst) {
  using P = Nibbles<T>;
  const auto* y = static_cast<const typename P::ActBlock*>(act);
  auto* q = static_cast<std::int8_t*>(dst);
  auto* neg = reinterpret_cast<std::int32_t*>(q + n);
  auto* d = reinterpret_cast<float*>(neg + n / 32);
  for (std::int64_t i = 0; i < n / 32; ++i) {
    std::memcpy(q + 32 * i, y[i].qs, 32);
    int sum = 0;
    for (int k = 0; k < 32; ++k) sum += y[i].qs[k];
    neg[i] = -P::kOff * sum;
    d[i] = _cvtsh_ss(y[i].d);
    if constexpr (P::kMin) d[n / 32 + i] = _cvtsh_ss(y[i].s);
  }
}

template <TensorType T, int NT>
void nibbles_tile(std::int64_t n, const std::byte* group, const void* act, std::size_t as,
                  float* out, std::size_t os) {
  using P = Nibbles<T>;
  const std::int64_t nb = n / 32;
  const std::int8_t* aq[NT];
  const std::int32_t* an[NT];
  const float* ad[NT];
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) {
    aq[t] = reinterpret_cast<const std::int8_t*>(static_cast<const std::byte*>(act) + t * as);
    an[t] = reinterpret_cast<const std::int32_t*>(aq[t] + n);
    ad[t] = reinterpret_cast<const float*>(an[t] + nb);
    acc[t] = _mm512_setzero_ps();
  }
  for (std::int64_t b = 0; b < nb; ++b) {
    const std::byte* blk = group + b * P::kBlock;
    prefetch_ahead<kPrefetchAheadAvx512>(blk, P::kBlock);
    __m512i wl[4], wh[4];
    P::weights(blk, wl, wh);
    const __m512 dw = group_k::b32_scales<T>(blk);
    __m512 mw = _mm512_setzero_ps();
    if constexpr (P::kMin) mw = group_k::b32_mins(blk);
    for (int t = 0; t < NT; ++t) {
      const std::int8_t* a = aq[t] + 32 * b;
      // Two chains each for the low and high nibbles: four multiply-adds in
      // flight per block instead of one chain of eight.
      __m512i l0 = _mm512_set1_epi32(an[t][b]), l1 = _mm512_setzero_si512();
      __m512i h0 = _mm512_setzero_si512(), h1 = _mm512_setzero_si512();
      l0 = _mm512_dpbusd_epi32(l0, wl[0], broadcast4(a));
      l1 = _mm512_dpbusd_epi32(l1, wl[1], broadcast4(a + 4));
      h0 = _mm512_dpbusd_epi32(h0, wh[0], broadcast4(a + 16));
      h1 = _mm512_dpbusd_epi32(h1, wh[1], broadcast4(a + 20));
      l0 = _mm512_dpbusd_epi32(l0, wl[2], broadcast4(a + 8));
      l1 = _mm512_dpbusd_epi32(l1, wl[3], broadcast4(a + 12));
      h0 = _mm512_dpbusd_epi32(h0, wh[2], broadcast4(a + 24));
      h1 = _mm512_dpbusd_epi32(h1, wh[3], broadcast4(a + 28));
      __m512i high = _mm512_add_epi32(h0, h1);
      if constexpr (P::kHighInPlace) high = _mm512_srai_epi32(high, 4);
      const __m512i sum = _mm512_add_epi32(_mm512_add_epi32(l0, l1), high);
      acc[t] = gemm_block_step(sum, dw, ad[t][b], acc[t]);
      if constexpr (P::kMin) acc[t] = _mm512_fmadd_ps(mw, _mm512_set1_ps(ad[t][nb + b]), acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) _mm512_storeu_ps(out + t * os, acc[t]);
}

// ---------------------------------------------------------------- Q8_0

// Eight 64-byte loads per block. vpdpbusd's unsigned operand is the token's
// int8 values + 128 (prepared), so each row gets 128 * its block's sum of
// weights too, taken out by a vpdpbusd of the weights against ones that all
// tokens share.
// Prepared token, 64-byte rounded: uint8 a + 128 [n] | f32 d[n / 32].
std::size_t q8_act_bytes(std::int64_t n) {
  return round64(static_cast<std::size_t>(n) + static_cast<std::size_t>(n / 32) * 4);
}

void q8_prepare(std::int64_t n, const void* act, void* dst) {
  const auto* y = static_cast<const BlockQ8_0*>(act);
  auto* q = static_cast<std::uint8_t*>(dst);
  auto* d = reinterpret_cast<float*>(q + n);
  for (std::int64_t i = 0; i < n / 32; ++i) {
    for (int k = 0; k < 32; ++k) q[32 * i + k] = static_cast<std::uint8_t>(y[i].qs[k] ^ 0x80);
    d[i] = _cvtsh_ss(y[i].d);
  }
}

template <int NT>
void q8_0_tile(std::int64_t n, const std::byte* group, const void* act, std::size_t as, float* out,
               std::size_t os) {
  const std::int64_t nb = n / 32;
  const std::int8_t* aq[NT];
  const float* ad[NT];
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) {
    aq[t] = reinterpret_cast<const std::int8_t*>(static_cast<const std::byte*>(act) + t * as);
    ad[t] = reinterpret_cast<const float*>(aq[t] + n);
    acc[t] = _mm512_setzero_ps();
  }
  const __m512i ones = _mm512_set1_epi8(1);
  for (std::int64_t b = 0; b < nb; ++b) {
    constexpr std::size_t kBlock = interleave::block_bytes(TensorType::Q8_0);
    // No software prefetch: Q8_0's stream, twice Q4_0's bytes for the same
    // arithmetic, is one Zen 4's hardware prefetchers keep up with alone (1B
    // Q8_0 decode at 1 thread, two rounds: 26.07 / 24.86 tok/s with prefetches
    // 8 KiB ahead, 27.29 / 26.62 without; the 4-bit types above lost 0-4%).
    const std::byte* blk = group + b * kBlock;
    __m512i w[8];
    for (int m = 0; m < 8; ++m)
      w[m] = _mm512_loadu_si512(blk + interleave::b32_values(TensorType::Q8_0) + 64 * m);
    __m512i c0 = _mm512_setzero_si512(), c1 = _mm512_setzero_si512();
    for (int m = 0; m < 8; m += 2) {
      c0 = _mm512_dpbusd_epi32(c0, ones, w[m]);
      c1 = _mm512_dpbusd_epi32(c1, ones, w[m + 1]);
    }
    const __m512i start =
        _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(_mm512_add_epi32(c0, c1), 7));
    const __m512 dw = group_k::half16(blk);
    for (int t = 0; t < NT; ++t) {
      const std::int8_t* a = aq[t] + 32 * b;
      __m512i p0 = start, p1 = _mm512_setzero_si512();
      for (int m = 0; m < 8; m += 2) {
        p0 = _mm512_dpbusd_epi32(p0, broadcast4(a + 4 * m), w[m]);
        p1 = _mm512_dpbusd_epi32(p1, broadcast4(a + 4 * m + 4), w[m + 1]);
      }
      acc[t] = gemm_block_step(_mm512_add_epi32(p0, p1), dw, ad[t][b], acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) _mm512_storeu_ps(out + t * os, acc[t]);
}

// dot.h GroupFn: four tokens at most per pass (8 weight vectors and 4
// accumulators live).
template <TensorType T>
void group_dot(std::int64_t n, const void* group, const void* act, std::size_t as, int n_act,
               float* out, std::size_t os) {
  for_each_tile<4>(act, as, n_act, out, os, [&](auto nt, const void* a, float* o) {
    const auto* g = static_cast<const std::byte*>(group);
    if constexpr (T == TensorType::Q8_0)
      q8_0_tile<nt>(n, g, a, as, o, os);
    else
      nibbles_tile<T, nt>(n, g, a, as, o, os);
  });
}

template <TensorType T>
constexpr RowFns nibbles_fns() {
  return {nibbles_act_bytes<T>, nibbles_prepare<T>, nullptr, nullptr, group_dot<T>};
}

}  // namespace

// Constant-initialized: no start-up code runs in this unit.
constinit const RowFns rows_q4_0_16 = nibbles_fns<TensorType::Q4_0>();
constinit const RowFns rows_q4_1_16 = nibbles_fns<TensorType::Q4_1>();
constinit const RowFns rows_q5_0_16 = nibbles_fns<TensorType::Q5_0>();
constinit const RowFns rows_q5_1_16 = nibbles_fns<TensorType::Q5_1>();
constinit const RowFns rows_iq4_nl_16 = nibbles_fns<TensorType::IQ4_NL>();
constinit const RowFns rows_mxfp4_16 = nibbles_fns<TensorType::MXFP4>();
constinit const RowFns rows_q8_0_16 = {q8_act_bytes, q8_prepare, nullptr, nullptr,
                                       group_dot<TensorType::Q8_0>};

}  // namespace seam::dot::avx512
