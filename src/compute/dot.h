// Dot-product kernels of one weight row against activation rows in the
// weight's dot type; quant::traits(t) pairs each weight type with its own
// (dot_type, dot kernels per CPU level). Every type has a scalar reference;
// the SIMD levels live in their own translation units (dot_avx2.cpp,
// dot_avx512.cpp), compiled with that level's flags and called only through
// Kernels::at() once cpu_level.h has said the CPU runs them. Nothing inline
// may be shared between those units and baseline code (the linker could keep
// the AVX copy): they define everything in their own namespace, internal
// helpers in an unnamed one, and a test checks their objects for weak symbols.
#pragma once

#include <cstddef>
#include <cstdint>

#include "compute/cpu_level.h"
#include "format/tensor_type.h"

namespace seam::dot {

// out[t * out_stride] = sum_k W[k] * A_t[k] for t in [0, n_act), where W is one
// weight row of n elements and A_t starts at act + t * act_stride bytes.
// Loading/unpacking each weight block once for all n_act rows is the point of
// taking several activation rows at once. Any n_act is taken; matmul passes
// at most kMaxTile per call, and each kernel runs them in tiles of as many as
// its level's registers hold (AVX2: 4, AVX-512: 8).
using DotFn = void (*)(std::int64_t n, const void* w, const void* act, std::size_t act_stride,
                       int n_act, float* out, std::size_t out_stride);

inline constexpr int kMaxTile = 8;

// Prefill as a GEMM (AVX-512 VNNI: vpdpbusd; AVX2: vpmaddubsw + vpmaddwd): kPanelRows weight rows
// are unpacked once per matmul into a panel of int8 in the order vpdpbusd consumes them (for each 4
// consecutive elements, 16 rows side by side), with per-unit scales; the activations, quantized
// once as usual, are put once into a layout the micro-kernel broadcasts from. Each panel then meets
// every token, 8 at a time.
inline constexpr int kPanelRows = 16;

struct GemmFns {
  int min_tokens;  // below this many tokens the dot kernels are faster
  // Bytes of one token's prepared activations / of one panel, for rows of n.
  std::size_t (*act_bytes)(std::int64_t n);
  std::size_t (*panel_bytes)(std::int64_t n);
  // One token: its activation row in the kernel's dot_type -> the GEMM layout.
  void (*prepare)(std::int64_t n, const void* act, void* dst);
  // n_rows (<= kPanelRows) weight rows, row_stride bytes apart -> one panel.
  void (*pack)(std::int64_t n, const void* w, std::size_t row_stride, int n_rows, void* panel);
  // out[t * ldy + r] = row r . token t for t < n_tok, r < n_rows; tokens are
  // act_bytes(n) apart from `act`.
  void (*run)(std::int64_t n, const void* panel, const void* act, std::int64_t n_tok, int n_rows,
              float* out, std::size_t ldy);
  // Relative error the prepared activations carry, each value against the
  // dot-type value it came from: 0 where prepare is exact (the int8 types, f32
  // activations), 2^-9 where they are rounded to bf16 (gemm_bf16_dp). A result
  // then moves by at most act_rel_error * sum |w * a| beyond f32 rounding.
  double act_rel_error = 0;
  // One group of 16 interleaved rows (interleave.h) -> the panel pack() makes
  // of those rows; null where the type has no interleaved layout.
  void (*pack16)(std::int64_t n, const void* group, void* panel) = nullptr;
};

// One token against kDecodeRows weight rows (FloatRows: long_count or
// kShortRowRows), row_stride bytes apart: out[r] = row r . token, the same
// bits as the level's one-row kernel gives. Decode's common case; the rows
// share each activation load and one reduction, which a 576-wide row cannot
// amortize (and FloatRows' rows, spaced apart by matmul.cpp, are each a stream
// of their own for the hardware prefetchers).
inline constexpr int kDecodeRows = 4;
// Rows from which FloatRows::long_rows runs, and how many per call at AVX-512
// and AVX2 (sixteen accumulators are all of AVX2's registers); short_rows
// takes the shorter ones (dot_rows_avx512.cpp long_rows_*).
inline constexpr std::int64_t kLongRow = 8192;
inline constexpr int kLongRowRows = 8;
inline constexpr int kLongRowRows2 = 4;
inline constexpr int kShortRowRows = 2;
using MultiRowFn = void (*)(std::int64_t n, const void* w, std::size_t row_stride, const void* act,
                            float* out);

// n_act prepared tokens, act_stride bytes apart, against one group of 16
// interleaved weight rows (interleave.h): out[t * out_stride + r] = row r . token t.
using GroupFn = void (*)(std::int64_t n, const void* group, const void* act, std::size_t act_stride,
                         int n_act, float* out, std::size_t out_stride);

// Decode (few tokens) on prepared activations: the activation rows, quantized
// as usual, are put once per matmul into a layout from which the kernel reads
// each weight row's partner values with plain loads (int8 values contiguous,
// each 4-value group's offset correction and each block's scale precomputed),
// so a weight row costs only its own unpacking. At the AVX-512 level for the
// 32-element block types, and at both SIMD levels for interleaved weights.
struct RowFns {
  // Bytes of one token's prepared activations for rows of n (a multiple of 64).
  std::size_t (*act_bytes)(std::int64_t n);
  // One token: its activation row in the kernel's dot_type -> the prepared layout.
  void (*prepare)(std::int64_t n, const void* act, void* dst);
  // A DotFn whose activation rows are prepared ones, act_bytes(n) apart.
  DotFn dot;
  // One prepared token against kDecodeRows rows (MultiRowFn).
  MultiRowFn dot_rows = nullptr;
  // Prepared tokens against one group of 16 interleaved rows (GroupFn); a
  // RowFns with it serves only interleaved weights, its `dot` is null.
  GroupFn dot16 = nullptr;
};

struct Kernels {
  DotFn scalar;            // reference, always present
  DotFn avx2 = nullptr;    // AVX2 + FMA + F16C, or null
  DotFn avx512 = nullptr;  // AVX-512 F/BW/VL/VNNI, or null (the level then runs the AVX2 kernel)
  const GemmFns* gemm512 = nullptr;    // prefill at the AVX-512 level, or null
  const RowFns* rows512 = nullptr;     // decode at the AVX-512 level on prepared rows, or null
  const RowFns* rows512_16 = nullptr;  // the same on interleaved weights (dot16), or null
  const GemmFns* gemm2 = nullptr;      // prefill at the AVX2 level, or null
  const GemmFns* gemm_amx = nullptr;   // prefill at the AMX level, or null
  MultiRowFn rows2 = nullptr;          // decode beside the avx2 kernel, on its activations, or null
  const RowFns* rows2_16 = nullptr;    // decode at the AVX2 level on interleaved weights, or null
  // The float types' decode beside a level's one-row kernel, on its plain
  // activations, each call's rows spaced apart (matmul.cpp): long_rows
  // long_count at a time on rows of kLongRow and more, whose f32 activations
  // overflow L1; short_rows kShortRowRows at a time on the others.
  struct FloatRows {
    MultiRowFn long_rows = nullptr;
    MultiRowFn short_rows = nullptr;
    int long_count = 0;
  };
  FloatRows float_rows512 = {};
  FloatRows float_rows2 = {};

  // The kernel for `level`: the highest one present at or below it.
  DotFn at(CpuLevel level) const {
    if (level >= CpuLevel::Avx512 && avx512) return avx512;
    if (level >= CpuLevel::Avx2 && avx2) return avx2;
    return scalar;
  }
  // The prefill GEMM for `level`: the highest one present at or below it, or null.
  const GemmFns* gemm_at(CpuLevel level) const {
    if (level >= CpuLevel::Amx && gemm_amx) return gemm_amx;
    if (level >= CpuLevel::Avx512 && gemm512) return gemm512;
    if (level >= CpuLevel::Avx2 && gemm2) return gemm2;
    return nullptr;
  }
  // The decode kernels on interleaved weights of `level` itself, or null (the
  // type is then not interleaved there; every type with the layout has them at
  // AVX2 and AVX-512).
  const RowFns* rows16_at(CpuLevel level) const {
    if (level >= CpuLevel::Avx512) return rows512_16;
    if (level >= CpuLevel::Avx2) return rows2_16;
    return nullptr;
  }
};

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
void mxfp4_q8_0(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);

// SIMD versions, one namespace per level (AVX-512 decode kernels: dot_rows_avx512.cpp).
namespace avx2 {
void f32_f32(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void f16_f32(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void bf16_f32(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void short_rows_f32(std::int64_t, const void*, std::size_t, const void*, float*);
void short_rows_f16(std::int64_t, const void*, std::size_t, const void*, float*);
void short_rows_bf16(std::int64_t, const void*, std::size_t, const void*, float*);
void long_rows_f32(std::int64_t, const void*, std::size_t, const void*, float*);
void long_rows_f16(std::int64_t, const void*, std::size_t, const void*, float*);
void long_rows_bf16(std::int64_t, const void*, std::size_t, const void*, float*);
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
void mxfp4_q8_0(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void rows_q4_0(std::int64_t, const void*, std::size_t, const void*, float*);
void rows_q5_0(std::int64_t, const void*, std::size_t, const void*, float*);
void rows_q8_0(std::int64_t, const void*, std::size_t, const void*, float*);
void rows_iq4_nl(std::int64_t, const void*, std::size_t, const void*, float*);
// Decode on interleaved weights at the AVX2 level (gemm_avx2.cpp).
extern const RowFns rows_q4_0_16, rows_q4_1_16, rows_q5_0_16, rows_q5_1_16, rows_q8_0_16,
    rows_iq4_nl_16, rows_mxfp4_16, rows_q2_k_16, rows_q3_k_16, rows_q4_k_16, rows_q5_k_16,
    rows_q6_k_16, rows_iq4_xs_16;
// Prefill GEMM at the AVX2 level (gemm_avx2.cpp).
extern const GemmFns gemm_q4_0, gemm_q5_0, gemm_q8_0, gemm_q4_k, gemm_q6_k, gemm_f32, gemm_f16,
    gemm_bf16;
extern const GemmFns gemm_q4_1, gemm_q5_1, gemm_q2_k, gemm_q3_k, gemm_q5_k, gemm_iq4_nl,
    gemm_iq4_xs, gemm_mxfp4;
}  // namespace avx2

namespace avx512 {
void f32_f32(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void f16_f32(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void bf16_f32(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void q4_0_q8_0(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void q5_0_q8_0(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void q8_0_q8_0(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void iq4_nl_q8_0(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void q4_k_q8_k(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void q5_k_q8_k(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void q6_k_q8_k(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
void mxfp4_q8_0(std::int64_t, const void*, const void*, std::size_t, int, float*, std::size_t);
extern const RowFns rows_q4_0, rows_q5_0, rows_q8_0, rows_iq4_nl;
// Decode on interleaved 32-element block types (group32_avx512.cpp).
extern const RowFns rows_q4_0_16, rows_q4_1_16, rows_q5_0_16, rows_q5_1_16, rows_q8_0_16,
    rows_iq4_nl_16, rows_mxfp4_16;
void long_rows_f32(std::int64_t, const void*, std::size_t, const void*, float*);
void long_rows_f16(std::int64_t, const void*, std::size_t, const void*, float*);
void long_rows_bf16(std::int64_t, const void*, std::size_t, const void*, float*);
void short_rows_f32(std::int64_t, const void*, std::size_t, const void*, float*);
void short_rows_f16(std::int64_t, const void*, std::size_t, const void*, float*);
void short_rows_bf16(std::int64_t, const void*, std::size_t, const void*, float*);
// Decode on interleaved K-quant and IQ4_XS groups (group_k_avx512.cpp).
extern const RowFns rows_q2_k_16, rows_q3_k_16, rows_q4_k_16, rows_q5_k_16, rows_q6_k_16,
    rows_iq4_xs_16;
extern const GemmFns gemm_q4_0, gemm_q5_0, gemm_q8_0, gemm_iq4_nl, gemm_q4_k, gemm_q5_k, gemm_q6_k,
    gemm_iq4_xs, gemm_mxfp4, gemm_f32, gemm_f16, gemm_bf16;
extern const GemmFns gemm_q4_1, gemm_q5_1, gemm_q2_k, gemm_q3_k;
// BF16 weights by vdpbf16ps on activations rounded to bf16 (gemm_bf16_avx512.cpp);
// runs only where cpu_has_avx512_bf16(), and is not in the kernel table (slower
// than gemm_bf16 on Sapphire Rapids; see that file).
extern const GemmFns gemm_bf16_dp;
}  // namespace avx512

// AMX-INT8 (gemm_amx.cpp): `run` for the AVX-512 GEMM's panels and prepared
// activations (its act_bytes, panel_bytes, prepare and pack), 16 tokens per
// tile multiply; the tokens left over go to the AVX-512 run.
namespace amx {
void run_q4_0(std::int64_t, const void*, const void*, std::int64_t, int, float*, std::size_t);
void run_q5_0(std::int64_t, const void*, const void*, std::int64_t, int, float*, std::size_t);
void run_q8_0(std::int64_t, const void*, const void*, std::int64_t, int, float*, std::size_t);
void run_iq4_nl(std::int64_t, const void*, const void*, std::int64_t, int, float*, std::size_t);
void run_q4_k(std::int64_t, const void*, const void*, std::int64_t, int, float*, std::size_t);
void run_q6_k(std::int64_t, const void*, const void*, std::int64_t, int, float*, std::size_t);
}  // namespace amx

}  // namespace seam::dot
