// AVX2 (+FMA, F16C) dot kernel of MXFP4 weights (gpt-oss experts) against Q8_0
// activations, up to 4 activation rows per weight row at a time. The doubled
// E2M1 codes (kMXFP4Values, |v| <= 12) come out of one byte shuffle, so a block
// costs what an IQ4_NL block does; the integer sums are exact and only the f32
// accumulation order differs from the scalar reference.
// Compiled with -mavx2 -mfma -mf16c (CMakeLists.txt); see dot.h on keeping
// this unit's code out of baseline callers.
#include <immintrin.h>

#include <cstring>

#include "compute/dot.h"
#include "compute/dot_tile.h"
#include "compute/prefetch.h"
#include "compute/quant_blocks.h"

namespace seam::dot::avx2 {
namespace {

using namespace seam::quant;

// [sum a, sum b, sum c, sum d] of four int32 vectors' lanes: exact (as dot_avx2.cpp's).
inline __m128i isum4(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i x = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
  return _mm_add_epi32(_mm256_castsi256_si128(x), _mm256_extracti128_si256(x, 1));
}

inline __m256i unpack(const BlockMXFP4& b) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
  const __m128i m = _mm_set1_epi8(0x0F);
  const __m256i idx = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m), _mm_and_si128(q, m));
  const __m256i table =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMXFP4Values)));
  return _mm256_shuffle_epi8(table, idx);
}

// The AVX2 GEMM's chain (gemm_avx2.cpp tile), as q_x_q8_0 in dot_avx2.cpp:
// per block the exact integer dot product, then acc = fma(float(isum),
// scale * da, acc); the tokens share one 4-lane vector of chains.
template <int NT>
void run(std::int64_t n, const void* w, const void* act, std::size_t as, float* out,
         std::size_t os) {
  static_assert(NT <= 4, "one 4-lane chain vector");
  const auto* x = static_cast<const BlockMXFP4*>(w);
  const std::int64_t nb = n / 32;
  const BlockQ8_0* y[4];
  for (int t = 0; t < 4; ++t)
    y[t] = reinterpret_cast<const BlockQ8_0*>(static_cast<const std::byte*>(act) +
                                              (t < NT ? t : 0) * as);
  __m128 acc = _mm_setzero_ps();
  for (std::int64_t i = 0; i < nb; ++i) {
    if ((i & 3) == 0) prefetch_ahead(x + i, 4 * sizeof(*x));
    const __m256i q = unpack(x[i]);
    const __m256i q_abs = _mm256_sign_epi8(q, q);
    __m256i p[4];
    for (int t = 0; t < NT; ++t) {
      const __m256i yq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[t][i].qs));
      // |q| * (y * sign(q)): maddubs wants its left operand unsigned.
      const __m256i p16 = _mm256_maddubs_epi16(q_abs, _mm256_sign_epi8(yq, q));
      p[t] = _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
    }
    for (int t = NT; t < 4; ++t) p[t] = p[0];
    const __m128 da = _mm_cvtph_ps(
        _mm_setr_epi16(static_cast<short>(y[0][i].d), static_cast<short>(y[1][i].d),
                       static_cast<short>(y[2][i].d), static_cast<short>(y[3][i].d), 0, 0, 0, 0));
    const __m128 s = _mm_mul_ps(_mm_set1_ps(mxfp4_scale(x[i].e)), da);
    acc = _mm_fmadd_ps(_mm_cvtepi32_ps(isum4(p[0], p[1], p[2], p[3])), s, acc);
  }
  alignas(16) float sums[4];
  _mm_store_ps(sums, acc);
  for (int t = 0; t < NT; ++t) out[t * os] = sums[t];
}

}  // namespace

void mxfp4_q8_0(std::int64_t n, const void* w, const void* act, std::size_t as, int n_act,
                float* out, std::size_t os) {
  for_each_tile<4>(act, as, n_act, out, os,
                   [&](auto nt, const void* a, float* o) { run<nt>(n, w, a, as, o, os); });
}

}  // namespace seam::dot::avx2
