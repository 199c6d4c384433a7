// AVX2 activation quantizers: Q8_0 (for Q4_0/Q5_0/Q8_0/IQ4_NL weights), Q8_1
// (for Q4_1/Q5_1) and Q8_K (for the K-quants). matmul quantizes every
// activation row once per weight tensor; the baseline (SSE2) build of the
// reference rules spent ~18% of a 135M Q4_0 prefill there (Q8_1's, 32% of a
// 135M Q4_1 prefill, until it had SIMD versions too). These produce the same bytes as quant.cpp's
// quantize_row_q8_0 / _q8_1 / _q8_K: the same IEEE operations on each
// element in the same order (a max is exact in any order; no sums of floats),
// and the same rounding rules written with vector instructions. Compiled with
// the AVX2 flags (CMakeLists.txt); see dot.h on keeping this unit's code out
// of baseline callers. Callers check that n is a multiple of the block size.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "compute/quant.h"
#include "compute/quant_blocks.h"
#include "compute/reduce_avx2.h"

namespace seam::quant::avx2 {
namespace {

// max(|x[i]|) over i < n (n a multiple of 8). max_ps returns its second
// operand when either is NaN, so NaN elements are skipped, as std::max(amax,
// |x|) skips them in the reference, and hmax8 never sees a NaN lane.
inline float abs_max(const float* x, int n) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m = _mm256_setzero_ps();
  for (int j = 0; j < n; j += 8)
    m = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)), m);
  return hmax8(m);
}

// quant.cpp's round_i8 on 8 lanes: NaN -> 0, saturate to [-128, 127], else
// truncate and step away from zero when the exact fraction reaches 0.5.
inline __m256i round_i8(__m256 v) {
  const __m256i ordered = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_ORD_Q));
  const __m256 c = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-128.0f)), _mm256_set1_ps(127.0f));
  __m256i i = _mm256_cvttps_epi32(c);
  const __m256 frac = _mm256_sub_ps(c, _mm256_cvtepi32_ps(i));
  const __m256i up = _mm256_castps_si256(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ));
  const __m256i down = _mm256_castps_si256(_mm256_cmp_ps(frac, _mm256_set1_ps(-0.5f), _CMP_LE_OQ));
  i = _mm256_add_epi32(_mm256_sub_epi32(i, up), down);  // masks are -1 where set
  return _mm256_and_si256(i, ordered);
}

// 32 int32 lanes (four vectors, in element order) -> 32 int8 at dst.
inline void store_i8(const __m256i q[4], std::int8_t* dst) {
  const __m256i p =
      _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
  // The packs interleave 128-bit lanes: dwords come out as 0 2 4 6 1 3 5 7.
  const __m256i fixed = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), fixed);
}

inline int hsum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

// core/half.h's f32_to_fp16: F16C rounds to nearest even and keeps a NaN's
// sign with the quiet bit, as it does.
inline std::uint16_t to_half(float f) {
  return static_cast<std::uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}

// The values of a Q8_0 or Q8_1 block: d = amax / 127, x / d rounded into qs.
// Returns d; `sum` (if given) gets the sum of the values.
inline float block32(const float* x, std::int8_t* qs, int* sum) {
  const float d = abs_max(x, 32) / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const __m256 vid = _mm256_set1_ps(id);
  __m256i q[4];
  for (int j = 0; j < 4; ++j) q[j] = round_i8(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * j), vid));
  store_i8(q, qs);
  if (sum)
    *sum = hsum(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
  return d;
}

}  // namespace

void quantize_row_q8_0(const float* x, void* dst, std::int64_t n) {
  auto* y = static_cast<BlockQ8_0*>(dst);
  for (std::int64_t i = 0; i < n / kQK8_0; ++i, x += kQK8_0)
    y[i].d = to_half(block32(x, y[i].qs, nullptr));
}

void quantize_row_q8_1(const float* x, void* dst, std::int64_t n) {
  auto* y = static_cast<BlockQ8_1*>(dst);
  for (std::int64_t i = 0; i < n / kQK8_1; ++i, x += kQK8_1) {
    int sum = 0;
    const float d = block32(x, y[i].qs, &sum);
    y[i].d = to_half(d);
    y[i].s = to_half(static_cast<float>(sum) * d);  // the f32 d, as the reference
  }
}

void quantize_row_q8_K(const float* x, void* dst, std::int64_t n) {
  auto* y = static_cast<BlockQ8_K*>(dst);
  for (std::int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K) {
    const float amax = abs_max(x, kQK_K);
    if (amax == 0.0f) {
      std::memset(&y[i], 0, sizeof(BlockQ8_K));
      continue;
    }
    // The reference keeps the signed value of the first element reaching amax.
    int first = 0;
    while (!(x[first] == amax || x[first] == -amax)) ++first;
    const float iscale = -127.0f / x[first];
    const __m256 vis = _mm256_set1_ps(iscale), magic = _mm256_set1_ps(12582912.0f);
    for (int g = 0; g < kQK_K / 32; ++g) {
      __m256i q[4];
      for (int j = 0; j < 4; ++j) {
        // nearest_int: adding 1.5 * 2^23 leaves round-to-even(v) in the low
        // mantissa bits (and the reference's bits for inf and NaN products).
        // The empty asm keeps the product rounded on its own: GCC fused it
        // with the sum into one fma, which rounds a product just off a
        // half-way value the other way (quant_act_test's planted values).
        __m256 p = _mm256_mul_ps(_mm256_loadu_ps(x + 32 * g + 8 * j), vis);
        __asm__("" : "+x"(p));
        const __m256 t = _mm256_add_ps(p, magic);
        const __m256i v = _mm256_sub_epi32(
            _mm256_and_si256(_mm256_castps_si256(t), _mm256_set1_epi32(0x007fffff)),
            _mm256_set1_epi32(0x00400000));
        q[j] = _mm256_min_epi32(v, _mm256_set1_epi32(127));
      }
      y[i].bsums[2 * g] = static_cast<std::int16_t>(hsum(_mm256_add_epi32(q[0], q[1])));
      y[i].bsums[2 * g + 1] = static_cast<std::int16_t>(hsum(_mm256_add_epi32(q[2], q[3])));
      store_i8(q, y[i].qs + 32 * g);
    }
    y[i].d = 1.0f / iscale;
  }
}

}  // namespace seam::quant::avx2
