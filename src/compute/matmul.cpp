#include "compute/matmul.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "compute/dot.h"
#include "compute/interleave.h"
#include "compute/quant.h"
#include "seam/error.h"

namespace seam {
namespace {

// Whether interleave.h can describe w's rows (its shape checked otherwise).
bool can_interleave(const WeightView& w) {
  return interleave::has_layout(w.type) && w.n_out % interleave::kRows == 0 &&
         w.row_stride == quant::row_size(w.type, w.n_in);
}

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
  if (w.interleaved16 && !can_interleave(w)) {
    throw Error(Errc::InvalidArgument, std::string(op) +
                                           " interleaved weights must be Q4_0, Q4_1, Q5_0, Q5_1, "
                                           "Q8_0, IQ4_NL, K-quant or IQ4_XS rows" +
                                           " in whole groups of 16, unpadded");
  }
  return *tr;
}

// One interleaved group's 16 rows in the file's layout, in a buffer of the
// calling thread's (the operations without a kernel for the interleave).
const std::byte* unpacked_group(const WeightView& w, std::int64_t first_row) {
  thread_local std::vector<std::byte> rows;
  rows.resize(interleave::kRows * w.row_stride);
  interleave::unpack(w.type, w.n_in, w.data + static_cast<std::size_t>(first_row) * w.row_stride,
                     rows.data());
  return rows.data();
}

// Prefill: every thread packs panels of kPanelRows weight rows (a few KiB to a
// few hundred KiB, kept in its L2) and runs all tokens against each.
// `prepared`: scratch.gemm_act already holds these activations in g's layout
// (the previous job's input, prepared by the same function).
void gemm_matmul(const dot::GemmFns& g, const WeightView& w, const std::byte* act,
                 std::size_t act_stride, std::int64_t n_tokens, float* y, std::int64_t ldy,
                 ThreadPool& pool, MatmulScratch& scratch, bool prepared = false) {
  const std::int64_t n = w.n_in;
  const std::size_t tok_bytes = g.act_bytes(n);
  const std::size_t need = tok_bytes * static_cast<std::size_t>(n_tokens);
  if (scratch.gemm_act.size() < need) scratch.gemm_act.resize(need);
  std::byte* ga = scratch.gemm_act.data();
  if (!prepared) {
    pool.parallel_for(static_cast<std::size_t>(n_tokens), 1, [&](std::size_t b, std::size_t e) {
      for (std::size_t t = b; t < e; ++t) g.prepare(n, act + t * act_stride, ga + t * tok_bytes);
    });
  }
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
      const std::byte* wr = w.data + static_cast<std::size_t>(r0) * w.row_stride;
      if (!w.interleaved16)
        g.pack(n, wr, w.row_stride, rows, pp);
      else if (g.pack16)
        g.pack16(n, wr, pp);
      else
        g.pack(n, unpacked_group(w, r0), w.row_stride, rows, pp);
      g.run(n, pp, ga, n_tokens, rows, y + r0, static_cast<std::size_t>(ldy));
    }
  });
}

// The dot-kernel path of one matmul once its activations are ready: rows
// [b, e) of the weight against every token.
struct RowPlan {
  const WeightView* w;
  dot::DotFn fn;
  const std::byte* act;
  std::size_t act_stride;
  std::int64_t n_tokens;
  float* y;
  std::int64_t ldy;
  // One token against multi_rows rows at once, where the kernel has it and
  // the rows are at most multi_max_stride bytes.
  dot::MultiRowFn multi = nullptr;
  std::size_t multi_max_stride = 0;
  std::size_t multi_rows = dot::kDecodeRows;
  // Whether a call's rows are spaced apart in the range rather than adjacent.
  bool multi_apart = false;
  // Interleaved weights' kernel (b and e are then multiples of 16), or null.
  dot::GroupFn group = nullptr;

  bool uses_multi() const { return multi && n_tokens == 1 && w->row_stride <= multi_max_stride; }
  // What a work item's row count should be a multiple of, so that none of its
  // rows falls back to the one-row kernel.
  std::size_t row_multiple() const {
    return w->interleaved16 ? interleave::kRows : uses_multi() ? multi_rows : 1;
  }
  // Weight elements a work item should hold (row_grain). Rows read spaced
  // apart want items of 1 MiB of F16 rather than 128 KiB: their streams are
  // then (items / 2) rows apart, not 16 rows of 2,048, and 1B F16 decode at 1
  // thread read 12.1-12.6 -> 13.1-13.7 tok/s (135M: 94 -> 102), 2 threads and
  // the quantized kernels the same within the noise (Zen 4).
  std::int64_t item_elements() const {
    return uses_multi() && multi_apart ? std::int64_t{1} << 19 : std::int64_t{1} << 16;
  }

  void rows(std::size_t b, std::size_t e) const {
    if (w->interleaved16) {
      for (; b < e; b += interleave::kRows) {
        if (!group) {
          row_range(unpacked_group(*w, static_cast<std::int64_t>(b)), b, b + interleave::kRows);
          continue;
        }
        for (std::int64_t t0 = 0; t0 < n_tokens; t0 += dot::kMaxTile) {
          const int nt = static_cast<int>(std::min<std::int64_t>(dot::kMaxTile, n_tokens - t0));
          group(w->n_in, w->data + b * w->row_stride,
                act + static_cast<std::size_t>(t0) * act_stride, act_stride, nt,
                y + t0 * ldy + static_cast<std::int64_t>(b), static_cast<std::size_t>(ldy));
        }
      }
      return;
    }
    row_range(w->data + b * w->row_stride, b, e);
  }

  // Rows [b, e), the first of them at `first`, row_stride apart.
  void row_range(const std::byte* first, std::size_t b, std::size_t e) const {
    const std::size_t b0 = b;
    auto row = [&](std::size_t r) { return first + (r - b0) * w->row_stride; };
    if (uses_multi() && multi_apart) {
      const std::size_t apart = (e - b) / multi_rows;
      float out[std::max(
          {dot::kDecodeRows, dot::kLongRowRows, dot::kLongRowRows2, dot::kShortRowRows})];
      for (std::size_t i = 0; i < apart; ++i) {
        multi(w->n_in, row(b + i), apart * w->row_stride, act, out);
        for (std::size_t r = 0; r < multi_rows; ++r) y[b + i + r * apart] = out[r];
      }
      b += apart * multi_rows;
    } else if (uses_multi()) {
      for (; b + multi_rows <= e; b += multi_rows)
        multi(w->n_in, row(b), w->row_stride, act, y + b);
    }
    // Each output row is one weight row against all tokens, kMaxTile tokens per
    // kernel call: the kernel unpacks each weight block once per tile, and the
    // row (a few KiB) stays in L1 across tiles while the activations sit in L2.
    for (std::size_t r = b; r < e; ++r) {
      const std::byte* wr = row(r);
      for (std::int64_t t0 = 0; t0 < n_tokens; t0 += dot::kMaxTile) {
        const int nt = static_cast<int>(std::min<std::int64_t>(dot::kMaxTile, n_tokens - t0));
        fn(w->n_in, wr, act + static_cast<std::size_t>(t0) * act_stride, act_stride, nt,
           y + t0 * ldy + static_cast<std::int64_t>(r), static_cast<std::size_t>(ldy));
      }
    }
  }
};

// Rows per work item: ~`elements` weight elements, but at least 4 items per thread
// over `total_rows`, so that the last item handed out leaves the other threads
// idle for a small share of the work (a 576-row decode matmul in 5 chunks kept
// 2 threads 40% unbalanced).
// A multiple of `multiple` (RowPlan::row_multiple).
std::size_t row_grain(std::int64_t n_in, std::int64_t total_rows, int n_threads,
                      std::size_t multiple, std::int64_t elements) {
  const std::int64_t per_thread = (total_rows + 4 * n_threads - 1) / (4 * n_threads);
  const auto g =
      static_cast<std::size_t>(std::max<std::int64_t>(1, std::min(elements / n_in, per_thread)));
  return (g + multiple - 1) / multiple * multiple;
}

// The prepared-row kernels for w at `level`, or null (dot.h RowFns).
const dot::RowFns* row_fns(const quant::TypeTraits& tr, CpuLevel level, const WeightView& w) {
  if (w.interleaved16) {
    if (const dot::RowFns* group = tr.dot.rows16_at(level)) return group;
  }
  return level >= CpuLevel::Avx512 ? tr.dot.rows512 : nullptr;
}

// Whether two kernels' prepared activations are the same bytes (Q4_K and
// Q6_K share theirs at AVX-512), so jobs on one input prepare it once.
bool same_prepared_layout(const dot::RowFns* a, const dot::RowFns* b) {
  return a == b || (a && b && a->prepare == b->prepare && a->act_bytes == b->act_bytes);
}

// Bytes of a job's activations in the weight's dot type.
std::size_t act_row_bytes(const quant::TypeTraits& tr, std::int64_t n_in) {
  return tr.dot_type == TensorType::F32 ? static_cast<std::size_t>(n_in) * sizeof(float)
                                        : quant::row_size(tr.dot_type, n_in);
}

// Quantizes tokens [b, e) of x into `q` (act_stride bytes per token).
void quantize_tokens(const quant::TypeTraits& tr, CpuLevel level, const float* x, std::int64_t n_in,
                     std::size_t b, std::size_t e, std::byte* q, std::size_t act_stride) {
  const quant::QuantizeFn quantize_row = quant::act_quantizer(tr.dot_type, level);
  for (std::size_t t = b; t < e; ++t)
    quantize_row(x + t * static_cast<std::size_t>(n_in), q + t * act_stride, n_in);
}

// The row plan of a dot-path matmul whose activations (in the dot type, or x
// itself for F32) are at `act`; `prepared` has room for the prepared layout
// where the level's kernel wants one.
// `already_prepared`: an earlier plan with the same input and prepared layout wrote it there.
RowPlan row_plan(const quant::TypeTraits& tr, CpuLevel level, const WeightView& w,
                 const std::byte* act, std::size_t act_stride, std::int64_t n_tokens, float* y,
                 std::int64_t ldy, std::vector<std::byte>& prepared, std::size_t prepared_at,
                 bool already_prepared = false) {
  RowPlan plan{&w, tr.dot.at(level), act, act_stride, n_tokens, y, ldy};
  // The AVX2 multi-row kernel matches the AVX2 one-row kernel bit for bit,
  // so only where that is the one in use. Its four FMA chains pay on rows of
  // any length (1B shape Q4_0 decode +20%, 135M +18%, at SEAM_CPU=avx2).
  if (plan.fn == tr.dot.avx2) {
    plan.multi = tr.dot.rows2;
    plan.multi_max_stride = SIZE_MAX;
  }
  // The same for float rows (dot.h FloatRows): long rows eight (AVX2: four) at
  // a time, which share each load of their L1-filling activations, the others
  // two at a time, two streams for the prefetchers (dot_rows_avx512.cpp
  // long_rows_*). A call's rows are (e - b) / multi_rows apart, not adjacent:
  // adjacent rows read in step are one stream that the prefetchers follow
  // poorly (1B F16 decode at 1 thread: two adjacent rows of 2,048 at a time 6.8
  // tok/s, two far apart 12.6, one at a time 11.7). The quantized kernels'
  // short rows lose by it (135M Q4_0 tg128 at 1 / 2 threads: 257 / 335 -> 246
  // / 308 tok/s).
  const dot::Kernels::FloatRows* fr = plan.fn == tr.dot.avx512 ? &tr.dot.float_rows512
                                      : plan.fn == tr.dot.avx2 ? &tr.dot.float_rows2
                                                               : nullptr;
  if (fr && fr->short_rows) {
    const bool long_rows = w.n_in >= dot::kLongRow && fr->long_rows;
    plan.multi = long_rows ? fr->long_rows : fr->short_rows;
    plan.multi_max_stride = SIZE_MAX;
    plan.multi_rows = static_cast<std::size_t>(long_rows ? fr->long_count : dot::kShortRowRows);
    plan.multi_apart = true;
  }
  const dot::RowFns* prep = row_fns(tr, level, w);
  if (prep) {
    // Activation work shared by every weight row, done once here (dot.h RowFns).
    const std::size_t tok_bytes = prep->act_bytes(w.n_in);
    std::byte* pa = prepared.data() + prepared_at;
    if (!already_prepared) {
      for (std::int64_t t = 0; t < n_tokens; ++t)
        prep->prepare(w.n_in, act + static_cast<std::size_t>(t) * act_stride, pa + t * tok_bytes);
    }
    plan.act = pa;
    plan.act_stride = tok_bytes;
    plan.fn = prep->dot;
    plan.group = prep->dot16;
    // Only short rows: there the per-row set-up and reduction cost as much as
    // the row's blocks (135M shape Q4_0 decode +34% at 2 threads), while four
    // interleaved streams of long rows read DRAM less well (1B shape -5%).
    plan.multi = prep->dot_rows;
    plan.multi_max_stride = 1024;
  }
  return plan;
}

std::size_t prepared_bytes(const quant::TypeTraits& tr, CpuLevel level, const WeightView& w,
                           std::int64_t n_tokens) {
  const dot::RowFns* prep = row_fns(tr, level, w);
  return prep ? prep->act_bytes(w.n_in) * static_cast<std::size_t>(n_tokens) : 0;
}

void check_output(const WeightView& w, std::int64_t n_tokens, std::int64_t ldy) {
  if (n_tokens < 0 || ldy < w.n_out) {
    throw Error(Errc::InvalidArgument, "[matmul] n_tokens " + std::to_string(n_tokens) + " / ldy " +
                                           std::to_string(ldy) + " do not fit an output of " +
                                           std::to_string(w.n_out) + " columns");
  }
}

// x's activations in the weight's dot type, quantized once for all output
// rows into scratch.act ([n_tokens][act_row_bytes]); x itself for f32.
const std::byte* quantized_act(const quant::TypeTraits& tr, CpuLevel level, const float* x,
                               std::int64_t n_in, std::int64_t n_tokens, ThreadPool& pool,
                               MatmulScratch& scratch) {
  if (tr.dot_type == TensorType::F32) return reinterpret_cast<const std::byte*>(x);
  const std::size_t stride = act_row_bytes(tr, n_in);
  const std::size_t need = stride * static_cast<std::size_t>(n_tokens);
  if (scratch.act.size() < need) scratch.act.resize(need);
  std::byte* q = scratch.act.data();
  pool.parallel_for(static_cast<std::size_t>(n_tokens), 1, [&](std::size_t b, std::size_t e) {
    quantize_tokens(tr, level, x, n_in, b, e, q, stride);
  });
  return q;
}

}  // namespace

void matmul(const WeightView& w, const float* x, std::int64_t n_tokens, float* y, std::int64_t ldy,
            ThreadPool& pool, MatmulScratch& scratch) {
  matmul(w, x, n_tokens, y, ldy, pool, scratch, active_cpu_level());
}

void matmul(const WeightView& w, const float* x, std::int64_t n_tokens, float* y, std::int64_t ldy,
            ThreadPool& pool, MatmulScratch& scratch, CpuLevel level) {
  const quant::TypeTraits& tr = checked_traits(w, "[matmul]");
  check_output(w, n_tokens, ldy);
  if (n_tokens == 0 || w.n_out == 0) return;

  const std::size_t act_stride = act_row_bytes(tr, w.n_in);
  const std::byte* act = quantized_act(tr, level, x, w.n_in, n_tokens, pool, scratch);
  const dot::GemmFns* gemm = tr.dot.gemm_at(level);
  if (gemm && n_tokens >= gemm->min_tokens) {
    gemm_matmul(*gemm, w, act, act_stride, n_tokens, y, ldy, pool, scratch);
    return;
  }
  const std::size_t prep = prepared_bytes(tr, level, w, n_tokens);
  if (scratch.gemm_act.size() < prep) scratch.gemm_act.resize(prep);
  const RowPlan plan =
      row_plan(tr, level, w, act, act_stride, n_tokens, y, ldy, scratch.gemm_act, 0);
  pool.parallel_for(
      static_cast<std::size_t>(w.n_out),
      row_grain(w.n_in, w.n_out, pool.size(), plan.row_multiple(), plan.item_elements()),
      [&](std::size_t b, std::size_t e) { plan.rows(b, e); });
}

void matmul_many(std::span<const MatmulJob> jobs, ThreadPool& pool, MatmulScratch& scratch) {
  const CpuLevel level = active_cpu_level();
  // Jobs the GEMM serves run alone; the rest share one dispatch. Activation
  // bytes first (so the buffers are sized once and their pointers hold). Jobs
  // with the same input in the same dot type (a layer's Q, K and V, or its gate
  // and up) share one quantized copy, and its prepared layout where the kernels
  // read the same one.
  struct Pending {
    const MatmulJob* job;
    const quant::TypeTraits* tr;
    const dot::RowFns* prep;
    std::size_t act_at, act_stride, prep_at;
    bool shares_act = false, shares_prep = false;
  };
  // Kept from call to call (their capacity): decode allocates nothing once warm.
  thread_local std::vector<Pending> pending;
  thread_local std::vector<RowPlan> plans;
  thread_local std::vector<std::pair<std::uint32_t, std::size_t>> items;
  pending.clear();
  plans.clear();
  items.clear();
  std::size_t act_total = 0, prep_total = 0;
  for (const MatmulJob& j : jobs) {  // every job checked before any runs
    checked_traits(j.w, "[matmul]");
    check_output(j.w, j.n_tokens, j.ldy);
  }
  // The GEMM jobs one after another; one that reads the same input as the GEMM
  // job before it (Q, K and V; an expert's gate and up) reuses its quantized
  // activations, and its prepared layout where the same function made it.
  struct GemmInput {
    const float* x = nullptr;
    std::int64_t n_tokens = 0, n_in = 0;
    TensorType dot_type = TensorType::F32;
    const std::byte* act = nullptr;
    void (*prepare)(std::int64_t, const void*, void*) = nullptr;
  } last;
  for (const MatmulJob& j : jobs) {
    const quant::TypeTraits& tr = *quant::traits(j.w.type);
    if (j.n_tokens == 0 || j.w.n_out == 0) continue;
    const dot::GemmFns* gemm = tr.dot.gemm_at(level);
    if (gemm && j.n_tokens >= gemm->min_tokens) {
      const bool same_input = last.x == j.x && last.n_tokens == j.n_tokens &&
                              last.n_in == j.w.n_in && last.dot_type == tr.dot_type;
      const std::byte* act =
          same_input ? last.act
                     : quantized_act(tr, level, j.x, j.w.n_in, j.n_tokens, pool, scratch);
      gemm_matmul(*gemm, j.w, act, act_row_bytes(tr, j.w.n_in), j.n_tokens, j.y, j.ldy, pool,
                  scratch, same_input && last.prepare == gemm->prepare);
      last = {j.x, j.n_tokens, j.w.n_in, tr.dot_type, act, gemm->prepare};
      continue;
    }
    Pending p{&j, &tr, row_fns(tr, level, j.w), act_total, act_row_bytes(tr, j.w.n_in), prep_total};
    for (const Pending& q : pending) {
      const MatmulJob& o = *q.job;
      if (o.x != j.x || o.n_tokens != j.n_tokens || o.w.n_in != j.w.n_in ||
          q.tr->dot_type != tr.dot_type)
        continue;
      p.shares_act = true;
      p.act_at = q.act_at;
      if (same_prepared_layout(q.prep, p.prep)) {
        p.shares_prep = true;
        p.prep_at = q.prep_at;
      }
      break;
    }
    // 64-byte steps keep every job's blocks as aligned as a buffer of their own.
    if (tr.dot_type != TensorType::F32 && !p.shares_act)
      act_total += (p.act_stride * static_cast<std::size_t>(j.n_tokens) + 63) / 64 * 64;
    if (!p.shares_prep) prep_total += prepared_bytes(tr, level, j.w, j.n_tokens);
    pending.push_back(p);
  }
  if (pending.empty()) return;
  if (scratch.act.size() < act_total) scratch.act.resize(act_total);
  if (scratch.gemm_act.size() < prep_total) scratch.gemm_act.resize(prep_total);

  std::int64_t total_rows = 0, widest = 1;
  std::size_t multiple = 1;
  std::int64_t item_elements = 0;
  for (const Pending& p : pending) {
    const MatmulJob& j = *p.job;
    const std::byte* act = reinterpret_cast<const std::byte*>(j.x);
    if (p.tr->dot_type != TensorType::F32) {
      std::byte* q = scratch.act.data() + p.act_at;
      if (!p.shares_act) {
        quantize_tokens(*p.tr, level, j.x, j.w.n_in, 0, static_cast<std::size_t>(j.n_tokens), q,
                        p.act_stride);
      }
      act = q;
    }
    plans.push_back(row_plan(*p.tr, level, j.w, act, p.act_stride, j.n_tokens, j.y, j.ldy,
                             scratch.gemm_act, p.prep_at, p.shares_prep));
    total_rows += j.w.n_out;
    widest = std::max(widest, j.w.n_in);
    multiple = std::lcm(multiple, plans.back().row_multiple());
    item_elements = std::max(item_elements, plans.back().item_elements());
  }
  // Work items: (plan, first row), each at most `grain` rows of one plan.
  const std::size_t grain = row_grain(widest, total_rows, pool.size(), multiple, item_elements);
  for (std::uint32_t i = 0; i < plans.size(); ++i)
    for (std::size_t r = 0; r < static_cast<std::size_t>(plans[i].w->n_out); r += grain)
      items.emplace_back(i, r);
  // The workers read this thread's lists (a thread_local named in the lambda
  // would be each worker's own).
  const auto* work = items.data();
  const RowPlan* plan_of = plans.data();
  pool.parallel_for(items.size(), 1, [&](std::size_t b, std::size_t e) {
    for (std::size_t it = b; it < e; ++it) {
      const auto [i, r0] = work[it];
      const RowPlan& plan = plan_of[i];
      plan.rows(r0, std::min(r0 + grain, static_cast<std::size_t>(plan.w->n_out)));
    }
  });
}

bool interleave_pays(const WeightView& w, CpuLevel level) {
  return w.n_out > 0 && w.n_in > 0 && w.n_in % 32 == 0 && can_interleave(w) &&
         quant::traits(w.type)->dot.rows16_at(level) != nullptr;
}

bool batch_invariant(const WeightView& w, CpuLevel level) {
  const quant::TypeTraits* tr = quant::traits(w.type);
  if (!tr) return false;
  switch (level) {
    case CpuLevel::Scalar:
      return true;
    case CpuLevel::Avx2:
      if (w.interleaved16) return tr->dot.rows16_at(level) != nullptr;
      return tr->block_size == 1 || tr->dot_type == TensorType::Q8_0 ||
             tr->dot_type == TensorType::Q8_1;
    case CpuLevel::Avx512:
      return tr->block_size == 1 || (w.interleaved16 && tr->dot.rows16_at(level) != nullptr);
    default:
      return false;
  }
}

void get_row(const WeightView& w, std::int64_t r, float* out) {
  checked_traits(w, "[get_row]");
  if (r < 0 || r >= w.n_out) {
    throw Error(Errc::InvalidArgument, "[get_row] row " + std::to_string(r) +
                                           " is out of range for a tensor of " +
                                           std::to_string(w.n_out) + " rows");
  }
  const std::byte* row = w.data + static_cast<std::size_t>(r) * w.row_stride;
  if (w.interleaved16) {  // an embedding tied to an interleaved output: this row alone
    thread_local std::vector<std::byte> unpacked;
    unpacked.resize(w.row_stride);
    const std::int64_t first = r / interleave::kRows * interleave::kRows;
    interleave::unpack_row(w.type, w.n_in, w.data + static_cast<std::size_t>(first) * w.row_stride,
                           static_cast<int>(r - first), unpacked.data());
    row = unpacked.data();
  }
  quant::dequantize_row(w.type, row, out, w.n_in);
}

}  // namespace seam
