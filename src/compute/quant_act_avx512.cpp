// AVX-512 activation quantizers (Q8_0, Q8_1, Q8_K): quant_act_avx2.cpp's
// rules in 16 lanes, with masks for the rounding steps and one down-converting
// store per 16 values.
// The same bytes as quant.cpp's quantize_row_q8_0 / _q8_1 / _q8_K: the
// same IEEE operations on each element (a max is exact in any order; no sums of
// floats). Matmul quantizes every activation row once per weight tensor, 5%
// of a 135M Q4_0 prefill with the AVX2 versions on Zen 5. Compiled with the
// AVX-512 flags (CMakeLists.txt); see dot.h on keeping this unit's code out
// of baseline callers. Callers check that n is a multiple of the block size.
// GCC 12's AVX-512 headers self-initialize their "undefined" vectors
// (__m512 __Y = __Y), which -Wuninitialized reports once inlined here.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "compute/quant.h"
#include "compute/quant_blocks.h"

namespace seam::quant::avx512 {
namespace {

// max(|x[i]|) over i < n (n a multiple of 16). max_ps returns its second
// operand when either is NaN, so NaN elements are skipped, as std::max(amax,
// |x|) skips them in the reference.
inline float abs_max(const float* x, int n) {
  __m512 m = _mm512_setzero_ps();
  for (int j = 0; j < n; j += 16) m = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + j)), m);
  return _mm512_reduce_max_ps(m);
}

// quant.cpp's round_i8 on 16 lanes: NaN -> 0, saturate to [-128, 127], else
// truncate and step away from zero when the exact fraction reaches 0.5.
inline __m512i round_i8(__m512 v) {
  const __mmask16 ordered = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
  const __m512 c = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-128.0f)), _mm512_set1_ps(127.0f));
  __m512i i = _mm512_cvttps_epi32(c);
  const __m512 frac = _mm512_sub_ps(c, _mm512_cvtepi32_ps(i));
  const __m512i one = _mm512_set1_epi32(1);
  i = _mm512_mask_add_epi32(i, _mm512_cmp_ps_mask(frac, _mm512_set1_ps(0.5f), _CMP_GE_OQ), i, one);
  i = _mm512_mask_sub_epi32(i, _mm512_cmp_ps_mask(frac, _mm512_set1_ps(-0.5f), _CMP_LE_OQ), i, one);
  return _mm512_maskz_mov_epi32(ordered, i);
}

// 16 int32 lanes in [-128, 127] -> 16 int8 at dst.
inline void store_i8(__m512i q, std::int8_t* dst) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm512_cvtepi32_epi8(q));
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
  const __m512 vid = _mm512_set1_ps(id);
  const __m512i q0 = round_i8(_mm512_mul_ps(_mm512_loadu_ps(x), vid));
  const __m512i q1 = round_i8(_mm512_mul_ps(_mm512_loadu_ps(x + 16), vid));
  store_i8(q0, qs);
  store_i8(q1, qs + 16);
  if (sum) *sum = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
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
    for (int j = 0;; j += 16) {
      const __mmask16 hit = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(x + j)),
                                               _mm512_set1_ps(amax), _CMP_EQ_OQ);
      if (hit != 0) {
        first = j + __builtin_ctz(hit);
        break;
      }
    }
    const float iscale = -127.0f / x[first];
    const __m512 vis = _mm512_set1_ps(iscale), magic = _mm512_set1_ps(12582912.0f);
    for (int g = 0; g < kQK_K / 16; ++g) {
      // nearest_int: adding 1.5 * 2^23 leaves round-to-even(v) in the low
      // mantissa bits (and the reference's bits for inf and NaN products).
      // The empty asm keeps the product rounded on its own, as in the AVX2
      // version: fused with the sum into one fma it would round a product just
      // off a half-way value the other way.
      __m512 p = _mm512_mul_ps(_mm512_loadu_ps(x + 16 * g), vis);
      __asm__("" : "+v"(p));
      const __m512 t = _mm512_add_ps(p, magic);
      const __m512i v =
          _mm512_sub_epi32(_mm512_and_si512(_mm512_castps_si512(t), _mm512_set1_epi32(0x007fffff)),
                           _mm512_set1_epi32(0x00400000));
      const __m512i q = _mm512_min_epi32(v, _mm512_set1_epi32(127));
      y[i].bsums[g] = static_cast<std::int16_t>(_mm512_reduce_add_epi32(q));
      store_i8(q, y[i].qs + 16 * g);
    }
    y[i].d = 1.0f / iscale;
  }
}

}  // namespace seam::quant::avx512
