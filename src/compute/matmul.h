// Matrix multiplication of a weight stored in its GGUF block format by f32
// activations. This is the one entry point the forward pass uses; the fast
// path (activations quantized once per call to the weight's dot type, integer
// SIMD dot products, multi-token tiles) lives behind it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "compute/cpu_level.h"
#include "core/thread_pool.h"
#include "format/tensor_type.h"

namespace seam {

// A 2-D weight in the file's layout: `n_out` rows of `n_in` elements each.
struct WeightView {
  TensorType type = TensorType::F32;
  std::int64_t n_in = 0;   // ne[0]: row length (the reduction dimension)
  std::int64_t n_out = 0;  // ne[1]: number of rows (output features)
  const std::byte* data = nullptr;
  std::size_t row_stride = 0;  // bytes between rows
  // The rows are stored 16 at a time (compute/interleave.h; Q4_0 and Q8_0, n_out
  // a multiple of 16, row_stride the row size): group g starts at
  // data + 16 g row_stride. Every operation here reads both layouts.
  bool interleaved16 = false;
};

// Reusable buffers for quantized activations; sized on first use, reused after.
struct MatmulScratch {
  std::vector<std::byte> act;
  std::vector<std::byte> gemm_act;  // activations in the GEMM or prepared-row layout (dot.h)
};

// Whether storing w interleaved (interleave.h) speeds up the kernels `level`
// runs: a matrix of interleave.h's types in whole groups of 16 unpadded rows, at a level
// with the interleaved decode kernel.
bool interleave_pays(const WeightView& w, CpuLevel level);

// Whether matmul at `level` gives a token's output row the same bits whatever
// other tokens share the call (alone, beside others, how many: the row, few-row
// and GEMM kernels add in one order), which seam serve's shared decode calls
// need (docs/server.md, "Batch invariance"). True at the scalar level; at AVX2
// for F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL and MXFP4 in any
// layout and every type interleaved; at AVX-512 for F32, F16 and BF16, and for
// the quantized types interleaved (every one has the layout). False where that
// is not known (AMX).
bool batch_invariant(const WeightView& w, CpuLevel level);

// y[t][r] = sum_k W[r][k] * x[t][k]
// x: [n_tokens][n_in] f32 (row stride n_in); y: [n_tokens][ldy] f32, ldy >= n_out.
// Runs the kernels of active_cpu_level(); the overload taking a level (tests,
// benches) runs that level's, which the caller must know the CPU supports.
void matmul(const WeightView& w, const float* x, std::int64_t n_tokens, float* y, std::int64_t ldy,
            ThreadPool& pool, MatmulScratch& scratch);
void matmul(const WeightView& w, const float* x, std::int64_t n_tokens, float* y, std::int64_t ldy,
            ThreadPool& pool, MatmulScratch& scratch, CpuLevel level);

// One of several independent matmuls: y[t][r] = sum_k W[r][k] * x[t][k].
struct MatmulJob {
  WeightView w;
  const float* x = nullptr;  // [n_tokens][w.n_in]
  std::int64_t n_tokens = 0;
  float* y = nullptr;  // [n_tokens][ldy]
  std::int64_t ldy = 0;
};

// The same results as matmul() on each job (at active_cpu_level()), with the
// row work of every job too small for the GEMM in one dispatch of the pool:
// MoE decode runs a few small expert matrices per layer, and one thread
// hand-off per matrix cost it more than the rows themselves.
void matmul_many(std::span<const MatmulJob> jobs, ThreadPool& pool, MatmulScratch& scratch);

// out[0..n_in) = row r of W, dequantized (embedding lookup).
void get_row(const WeightView& w, std::int64_t r, float* out);

}  // namespace seam
