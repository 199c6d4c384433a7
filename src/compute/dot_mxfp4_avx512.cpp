// AVX-512 (F/BW/VL/VNNI) dot kernel of MXFP4 weights (gpt-oss experts) against
// Q8_0 activations, up to 4 activation rows per weight row at a time. Two blocks
// per 512-bit register: the doubled E2M1 codes come out of one byte shuffle.
// vpdpbusd wants one unsigned operand, so the activations are biased by +128
// (xor 0x80) and each block pair's accumulator starts at -128 * sum(w) per 4
// lanes (one vpdpbusd shared by every token): each int32 lane holds an exact
// sum of a * w. An odd last block pairs with itself at scale 0. Only the f32
// accumulation order differs from the scalar reference.
// Compiled with the AVX-512 flags (CMakeLists.txt); see dot.h on keeping this
// unit's code out of baseline callers.
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

// Signed weights of two blocks, element order: [b0 lo | b0 hi | b1 lo | b1 hi].
inline __m512i unpack2(const BlockMXFP4& b0, const BlockMXFP4& b1) {
  __m512i v = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b0.qs)));
  v = _mm512_mask_broadcast_i32x4(v, 0xFF00,
                                  _mm_loadu_si128(reinterpret_cast<const __m128i*>(b1.qs)));
  v = _mm512_mask_srli_epi16(v, 0xFF00FF00u, v, 4);  // 128-bit lanes 1 and 3: high nibbles
  const __m512i idx = _mm512_and_si512(v, _mm512_set1_epi8(0x0F));
  const __m512i table =
      _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMXFP4Values)));
  return _mm512_shuffle_epi8(table, idx);
}

inline __m512i acts2(const BlockQ8_0& a0, const BlockQ8_0& a1) {
  const __m512i v = _mm512_inserti64x4(
      _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a0.qs))),
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a1.qs)), 1);
  return _mm512_xor_si512(v, _mm512_set1_epi8(static_cast<char>(0x80)));
}

template <int NT>
void run(std::int64_t n, const void* w, const void* act, std::size_t as, float* out,
         std::size_t os) {
  const auto* x = static_cast<const BlockMXFP4*>(w);
  const std::int64_t nb = n / 32;
  const BlockQ8_0* y[NT];
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) {
    y[t] = reinterpret_cast<const BlockQ8_0*>(static_cast<const std::byte*>(act) + t * as);
    acc[t] = _mm512_setzero_ps();
  }
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
  for (std::int64_t i = 0; i < nb; i += 2) {
    if ((i & 3) == 0) prefetch_ahead<kPrefetchAheadAvx512>(x + i, 4 * sizeof(*x));
    const bool pair = i + 1 < nb;
    const std::int64_t i1 = pair ? i + 1 : i;
    const __m512i q = unpack2(x[i], x[i1]);
    const __m512i corr = _mm512_sub_epi32(_mm512_setzero_si512(),
                                          _mm512_dpbusd_epi32(_mm512_setzero_si512(), bias, q));
    const float d0 = mxfp4_scale(x[i].e);
    const float d1 = pair ? mxfp4_scale(x[i1].e) : 0.0f;
    for (int t = 0; t < NT; ++t) {
      const __m512i s = _mm512_dpbusd_epi32(corr, acts2(y[t][i], y[t][i1]), q);
      const __m512 sc = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(d0 * _cvtsh_ss(y[t][i].d)),
                                             _mm512_set1_ps(d1 * _cvtsh_ss(y[t][i1].d)));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), sc, acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) out[t * os] = _mm512_reduce_add_ps(acc[t]);
}

}  // namespace

void mxfp4_q8_0(std::int64_t n, const void* w, const void* act, std::size_t as, int n_act,
                float* out, std::size_t os) {
  for_each_tile<4>(act, as, n_act, out, os,
                   [&](auto nt, const void* a, float* o) { run<nt>(n, w, a, as, o, os); });
}

}  // namespace seam::dot::avx512
