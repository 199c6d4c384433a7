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

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// 32 signed weights of one block, element order (low nibbles 0..15, high 16..31).
inline __m256i unpack(const BlockMXFP4& b) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
  const __m128i m = _mm_set1_epi8(0x0F);
  const __m256i idx = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m), _mm_and_si128(q, m));
  const __m256i table =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMXFP4Values)));
  return _mm256_shuffle_epi8(table, idx);
}

template <int NT>
void run(std::int64_t n, const void* w, const void* act, std::size_t as, float* out,
         std::size_t os) {
  const auto* x = static_cast<const BlockMXFP4*>(w);
  const std::int64_t nb = n / 32;
  const BlockQ8_0* y[NT];
  __m256 acc[NT];
  for (int t = 0; t < NT; ++t) {
    y[t] = reinterpret_cast<const BlockQ8_0*>(static_cast<const std::byte*>(act) + t * as);
    acc[t] = _mm256_setzero_ps();
  }
  for (std::int64_t i = 0; i < nb; ++i) {
    if ((i & 3) == 0) prefetch_ahead(x + i, 4 * sizeof(*x));
    const __m256i q = unpack(x[i]);
    const __m256i q_abs = _mm256_sign_epi8(q, q);
    const float dw = mxfp4_scale(x[i].e);
    for (int t = 0; t < NT; ++t) {
      const __m256i yq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[t][i].qs));
      // |q| * (y * sign(q)): maddubs wants its left operand unsigned.
      const __m256i p16 = _mm256_maddubs_epi16(q_abs, _mm256_sign_epi8(yq, q));
      const __m256 p = _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
      acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dw * _cvtsh_ss(y[t][i].d)), p, acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) out[t * os] = hsum(acc[t]);
}

}  // namespace

void mxfp4_q8_0(std::int64_t n, const void* w, const void* act, std::size_t as, int n_act,
                float* out, std::size_t os) {
  for_each_tile<4>(act, as, n_act, out, os,
                   [&](auto nt, const void* a, float* o) { run<nt>(n, w, a, as, o, os); });
}

}  // namespace seam::dot::avx2
