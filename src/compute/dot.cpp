#include "compute/dot.h"

namespace seam::dot {

const Kernels* kernels(TensorType t) {
#if SEAM_DOT_AVX2
#define SEAM_KERNELS(ref, simd) \
  Kernels { ref, avx2::simd }
#else
#define SEAM_KERNELS(ref, simd) \
  Kernels { ref, ref }
#endif
  static constexpr Kernels kF32 = SEAM_KERNELS(f32_f32, f32_f32);
  static constexpr Kernels kF16 = SEAM_KERNELS(f16_f32, f16_f32);
  static constexpr Kernels kBF16 = SEAM_KERNELS(bf16_f32, bf16_f32);
  static constexpr Kernels kQ4_0 = SEAM_KERNELS(q4_0_q8_0, q4_0_q8_0);
  static constexpr Kernels kQ4_1 = SEAM_KERNELS(q4_1_q8_1, q4_1_q8_1);
  static constexpr Kernels kQ5_0 = SEAM_KERNELS(q5_0_q8_0, q5_0_q8_0);
  static constexpr Kernels kQ5_1 = SEAM_KERNELS(q5_1_q8_1, q5_1_q8_1);
  static constexpr Kernels kQ8_0 = SEAM_KERNELS(q8_0_q8_0, q8_0_q8_0);
  static constexpr Kernels kQ2_K = SEAM_KERNELS(q2_k_q8_k, q2_k_q8_k);
  static constexpr Kernels kQ3_K = SEAM_KERNELS(q3_k_q8_k, q3_k_q8_k);
  static constexpr Kernels kQ4_K = SEAM_KERNELS(q4_k_q8_k, q4_k_q8_k);
  static constexpr Kernels kQ5_K = SEAM_KERNELS(q5_k_q8_k, q5_k_q8_k);
  static constexpr Kernels kQ6_K = SEAM_KERNELS(q6_k_q8_k, q6_k_q8_k);
  static constexpr Kernels kIQ4_NL = SEAM_KERNELS(iq4_nl_q8_0, iq4_nl_q8_0);
  static constexpr Kernels kIQ4_XS = SEAM_KERNELS(iq4_xs_q8_k, iq4_xs_q8_k);
#undef SEAM_KERNELS
  switch (t) {
    case TensorType::F32:
      return &kF32;
    case TensorType::F16:
      return &kF16;
    case TensorType::BF16:
      return &kBF16;
    case TensorType::Q4_0:
      return &kQ4_0;
    case TensorType::Q4_1:
      return &kQ4_1;
    case TensorType::Q5_0:
      return &kQ5_0;
    case TensorType::Q5_1:
      return &kQ5_1;
    case TensorType::Q8_0:
      return &kQ8_0;
    case TensorType::Q2_K:
      return &kQ2_K;
    case TensorType::Q3_K:
      return &kQ3_K;
    case TensorType::Q4_K:
      return &kQ4_K;
    case TensorType::Q5_K:
      return &kQ5_K;
    case TensorType::Q6_K:
      return &kQ6_K;
    case TensorType::IQ4_NL:
      return &kIQ4_NL;
    case TensorType::IQ4_XS:
      return &kIQ4_XS;
    default:
      return nullptr;
  }
}

const char* simd_name() {
#if SEAM_DOT_AVX2
  return "avx2";
#else
  return "scalar";
#endif
}

}  // namespace seam::dot
