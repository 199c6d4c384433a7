// Dot-product kernels of one weight row against activation rows in the
// weight's dot type; quant::traits(t) pairs each weight type with its own
// (dot_type, dot.scalar, dot.fast). Every type has a scalar
// reference; SIMD versions exist where this build's target allows and are
// tested against it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/tensor_type.h"

// AVX2 kernels need FMA and F16C too; Zen/Haswell and later have all three.
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define SEAM_DOT_AVX2 1
#else
#define SEAM_DOT_AVX2 0
#endif

namespace seam::dot {

// out[t * out_stride] = sum_k W[k] * A_t[k] for t in [0, n_act), where W is one
// weight row of n elements and A_t starts at act + t * act_stride bytes.
// Loading/unpacking each weight block once for all n_act rows is the point of
// taking several activation rows at once (n_act <= kMaxTile).
using DotFn = void (*)(std::int64_t n, const void* w, const void* act, std::size_t act_stride,
                       int n_act, float* out, std::size_t out_stride);

inline constexpr int kMaxTile = 4;

struct Kernels {
  DotFn scalar;  // reference, always present
  DotFn fast;    // best available on this build's target (== scalar when no SIMD path)
};

// The SIMD path this build was compiled with ("avx2" or "scalar"), for logs and benches.
const char* simd_name();

// Scalar references, one per weight type (activation type in the name).
void f32_f32(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void f16_f32(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void bf16_f32(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void q4_0_q8_0(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void q4_1_q8_1(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void q5_0_q8_0(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void q5_1_q8_1(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void q8_0_q8_0(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void q2_k_q8_k(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void q3_k_q8_k(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void q4_k_q8_k(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void q5_k_q8_k(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void q6_k_q8_k(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void iq4_nl_q8_0(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void iq4_xs_q8_k(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);

// SIMD versions; defined only when the target has them (see dot_avx2.cpp).
namespace avx2 {
void f32_f32(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void f16_f32(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void bf16_f32(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void q4_0_q8_0(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void q8_0_q8_0(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void q4_k_q8_k(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void q6_k_q8_k(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void q4_1_q8_1(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void q5_0_q8_0(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void q5_1_q8_1(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void q2_k_q8_k(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void q3_k_q8_k(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void q5_k_q8_k(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void iq4_nl_q8_0(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void iq4_xs_q8_k(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
}  // namespace avx2

}  // namespace seam::dot
