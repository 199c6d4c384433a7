#include "compute/matmul.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "compute/dot.h"
#include "compute/quant.h"
#include "seam/error.h"

namespace seam {
namespace {

const quant::TypeTraits& checked_traits(const WeightView& w, const char* op) {
  const quant::TypeTraits* tr = quant::traits(w.type);
  if (!tr) {
    throw Error(Errc::Unsupported, std::string(op) + " tensor type " + quant::type_name(w.type) +
                                       " has no CPU kernels in this build");
  }
  if (w.n_in <= 0 || w.n_out < 0 || w.n_in % tr->block_size != 0) {
    throw Error(Errc::InvalidArgument, std::string(op) + " weight shape [" +
                                           std::to_string(w.n_in) + ", " + std::to_string(w.n_out) +
                                           "] is invalid for " + quant::type_name(w.type) +
                                           " (row length must be a positive multiple of " +
                                           std::to_string(tr->block_size) + ")");
  }
  const std::size_t row = quant::row_size(w.type, w.n_in);
  if (w.row_stride < row || (w.n_out > 0 && w.data == nullptr)) {
    throw Error(Errc::InvalidArgument, std::string(op) + " weight rows of " +
                                           std::to_string(w.row_stride) + " bytes cannot hold " +
                                           std::to_string(w.n_in) + " " + quant::type_name(w.type) +
                                           " elements");
  }
  // Blocks are read through their structs: rows must keep the f32 / fp16 fields
  // aligned (MXFP4 blocks hold only bytes).
  const std::size_t align = w.type == TensorType::F32 ? 4 : w.type == TensorType::MXFP4 ? 1 : 2;
  if (w.row_stride % align != 0 || reinterpret_cast<std::uintptr_t>(w.data) % align != 0) {
    throw Error(Errc::InvalidArgument, std::string(op) + " " + quant::type_name(w.type) +
                                           " weight rows must be " + std::to_string(align) +
                                           "-byte aligned");
  }
  return *tr;
}

// Prefill: every thread packs panels of kPanelRows weight rows (a few KiB to a
// few hundred KiB, kept in its L2) and runs all tokens against each.
void gemm_matmul(const dot::GemmFns& g, const WeightView& w, const std::byte* act,
                 std::size_t act_stride, std::int64_t n_tokens, float* y, std::int64_t ldy,
                 ThreadPool& pool, MatmulScratch& scratch) {
  const std::int64_t n = w.n_in;
  const std::size_t tok_bytes = g.act_bytes(n);
  const std::size_t need = tok_bytes * static_cast<std::size_t>(n_tokens);
  if (scratch.gemm_act.size() < need) scratch.gemm_act.resize(need);
  std::byte* ga = scratch.gemm_act.data();
  pool.parallel_for(static_cast<std::size_t>(n_tokens), 1, [&](std::size_t b, std::size_t e) {
    for (std::size_t t = b; t < e; ++t) g.prepare(n, act + t * act_stride, ga + t * tok_bytes);
  });
  const std::size_t n_panels =
      static_cast<std::size_t>((w.n_out + dot::kPanelRows - 1) / dot::kPanelRows);
  pool.parallel_for(n_panels, 1, [&](std::size_t b, std::size_t e) {
    thread_local std::vector<std::byte> panel;
    const std::size_t pb = g.panel_bytes(n);
    if (panel.size() < pb + 64) panel.resize(pb + 64);
    // 64-byte aligned: the kernels read the panel a cache line per vector, and
    // a misaligned panel splits every one of those loads.
    std::byte* pp = panel.data() + (64 - reinterpret_cast<std::uintptr_t>(panel.data()) % 64) % 64;
    for (std::size_t p = b; p < e; ++p) {
      const std::int64_t r0 = static_cast<std::int64_t>(p) * dot::kPanelRows;
      const int rows = static_cast<int>(std::min<std::int64_t>(dot::kPanelRows, w.n_out - r0));
      g.pack(n, w.data + static_cast<std::size_t>(r0) * w.row_stride, w.row_stride, rows, pp);
      g.run(n, pp, ga, n_tokens, rows, y + r0, static_cast<std::size_t>(ldy));
    }
  });
}

}  // namespace

void matmul(const WeightView& w, const float* x, std::int64_t n_tokens, float* y, std::int64_t ldy,
            ThreadPool& pool, MatmulScratch& scratch) {
  matmul(w, x, n_tokens, y, ldy, pool, scratch, active_cpu_level());
}

void matmul(const WeightView& w, const float* x, std::int64_t n_tokens, float* y, std::int64_t ldy,
            ThreadPool& pool, MatmulScratch& scratch, CpuLevel level) {
  const quant::TypeTraits& tr = checked_traits(w, "[matmul]");
  if (n_tokens < 0 || ldy < w.n_out) {
    throw Error(Errc::InvalidArgument, "[matmul] n_tokens " + std::to_string(n_tokens) + " / ldy " +
                                           std::to_string(ldy) + " do not fit an output of " +
                                           std::to_string(w.n_out) + " columns");
  }
  if (n_tokens == 0 || w.n_out == 0) return;
  const dot::Kernels* k = &tr.dot;

  // Activations in the weight's dot type, quantized once for all output rows:
  // act: [n_tokens][act_stride bytes].
  const std::byte* act = reinterpret_cast<const std::byte*>(x);
  std::size_t act_stride = static_cast<std::size_t>(w.n_in) * sizeof(float);
  if (tr.dot_type != TensorType::F32) {
    act_stride = quant::row_size(tr.dot_type, w.n_in);
    const std::size_t need = act_stride * static_cast<std::size_t>(n_tokens);
    if (scratch.act.size() < need) scratch.act.resize(need);
    std::byte* q = scratch.act.data();
    const quant::QuantizeFn quantize_row = quant::act_quantizer(tr.dot_type, level);
    auto quantize = [&](std::size_t b, std::size_t e) {
      for (std::size_t t = b; t < e; ++t) {
        quantize_row(x + t * static_cast<std::size_t>(w.n_in), q + t * act_stride, w.n_in);
      }
    };
    pool.parallel_for(static_cast<std::size_t>(n_tokens), 1, quantize);
    act = q;
  }

  const dot::GemmFns* gemm = k->gemm_at(level);
  if (gemm && n_tokens >= gemm->min_tokens) {
    gemm_matmul(*gemm, w, act, act_stride, n_tokens, y, ldy, pool, scratch);
    return;
  }

  // Each output row is one weight row against all tokens, kMaxTile tokens per
  // kernel call: the kernel unpacks each weight block once per tile, and the row
  // (a few KiB) stays in L1 across tiles while the activations sit in L2.
  dot::DotFn fn = k->at(level);
  const dot::RowFns* prep = level >= CpuLevel::Avx512 ? k->rows512 : nullptr;
  if (prep) {
    // Activation work shared by every weight row, done once here (dot.h RowFns).
    const std::size_t tok_bytes = prep->act_bytes(w.n_in);
    const std::size_t need = tok_bytes * static_cast<std::size_t>(n_tokens);
    if (scratch.gemm_act.size() < need) scratch.gemm_act.resize(need);
    std::byte* pa = scratch.gemm_act.data();
    for (std::int64_t t = 0; t < n_tokens; ++t) {
      prep->prepare(w.n_in, act + static_cast<std::size_t>(t) * act_stride, pa + t * tok_bytes);
    }
    act = pa;
    act_stride = tok_bytes;
    fn = prep->dot;
  }
  const std::int64_t n_in = w.n_in;
  auto rows = [&](std::size_t b, std::size_t e) {
    for (std::size_t r = b; r < e; ++r) {
      const std::byte* wr = w.data + r * w.row_stride;
      for (std::int64_t t0 = 0; t0 < n_tokens; t0 += dot::kMaxTile) {
        const int nt = static_cast<int>(std::min<std::int64_t>(dot::kMaxTile, n_tokens - t0));
        fn(n_in, wr, act + static_cast<std::size_t>(t0) * act_stride, act_stride, nt,
           y + t0 * ldy + static_cast<std::int64_t>(r), static_cast<std::size_t>(ldy));
      }
    }
  };
  // Small rows make per-chunk overhead matter: aim for ~64K weight elements per
  // chunk, but at least 4 chunks per thread, so that the last chunk handed out
  // leaves the other threads idle for a small share of the matmul (a 576-row
  // decode matmul in 5 chunks kept 2 threads 40% unbalanced).
  const std::int64_t per_thread = (w.n_out + 4 * pool.size() - 1) / (4 * pool.size());
  const std::size_t grain = static_cast<std::size_t>(
      std::max<std::int64_t>(1, std::min<std::int64_t>(65536 / n_in, per_thread)));
  pool.parallel_for(static_cast<std::size_t>(w.n_out), grain, rows);
}

void get_row(const WeightView& w, std::int64_t r, float* out) {
  checked_traits(w, "[get_row]");
  if (r < 0 || r >= w.n_out) {
    throw Error(Errc::InvalidArgument, "[get_row] row " + std::to_string(r) +
                                           " is out of range for a tensor of " +
                                           std::to_string(w.n_out) + " rows");
  }
  quant::dequantize_row(w.type, w.data + static_cast<std::size_t>(r) * w.row_stride, out, w.n_in);
}

}  // namespace seam
