// Attention alone at SmolLM-135M's head shape (9 query heads, 3 KV heads,
// head_dim 64), a Llama-3.2-1B-like one (32 query heads, 8 KV heads), Gemma 2
// 2B's (8 query heads, 4 KV heads, head_dim 256) and Gemma 3 1B's (4 query
// heads, 1 KV head, head_dim 256) over D
// cached cells (32,768: a layer's cache well past L3, read from DRAM): the per-(token, head)
// two-pass reference (what CpuBackend ran before the tiled kernel) against the tiled online softmax
// over F32, F16 and Q8_0 caches, at the CPU level in use and (F16) at the scalar level. Reported as
// query rows per second of wall time.
//
//   bench_kernels --benchmark_filter=Attention
//   SEAM_BENCH_THREADS=1 bench_kernels --benchmark_filter=Attention
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "compute/attention.h"
#include "compute/ops.h"
#include "compute/quant.h"
#include "core/half.h"
#include "core/thread_pool.h"

namespace seam {
namespace {

// The benchmarks' third argument: 0 the 135M shape, 1 the 1B one, 2 Gemma 2
// 2B's, 3 Gemma 3 1B's.
struct HeadShape {
  std::int32_t heads, kv_heads, head_dim;
};
constexpr HeadShape kShapes[] = {{9, 3, 64}, {32, 8, 64}, {8, 4, 256}, {4, 1, 256}};

int bench_threads() {
  const char* t = std::getenv("SEAM_BENCH_THREADS");
  return t ? std::atoi(t) : 0;
}

struct Setup {
  HeadShape shape;
  std::vector<float> q, k, v, out;
  std::vector<std::uint16_t> k16, v16;
  std::vector<std::byte> k8, v8;
  std::vector<std::uint32_t> offsets, cells;
  AttentionArgs args(KvType type) {
    AttentionArgs a;
    a.q = q.data();
    a.k = type == KvType::F32   ? static_cast<const void*>(k.data())
          : type == KvType::F16 ? static_cast<const void*>(k16.data())
                                : static_cast<const void*>(k8.data());
    a.v = type == KvType::F32   ? static_cast<const void*>(v.data())
          : type == KvType::F16 ? static_cast<const void*>(v16.data())
                                : static_cast<const void*>(v8.data());
    a.kv_type = type;
    a.out = out.data();
    a.n_tokens = static_cast<std::int64_t>(offsets.size() - 1);
    a.n_head = shape.heads;
    a.n_head_kv = shape.kv_heads;
    a.head_dim = shape.head_dim;
    a.scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
    const std::span<const std::uint32_t> off(offsets);  // row t: off[t] .. off[t + 1]
    a.mask = {off.first(off.size() - 1), off.subspan(1), cells};
    return a;
  }
};

// `depth` cached cells, then `n` causal rows.
Setup make(std::int64_t depth, std::int64_t n, std::int64_t shape) {
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  Setup s;
  s.shape = kShapes[shape];
  const std::size_t cells = static_cast<std::size_t>(depth + n);
  s.q.resize(static_cast<std::size_t>(n) * s.shape.heads * s.shape.head_dim);
  s.out.resize(s.q.size());
  s.k.resize(cells * s.shape.kv_heads * s.shape.head_dim);
  s.v.resize(s.k.size());
  for (float& x : s.q) x = nd(rng);
  for (float& x : s.k) x = nd(rng);
  for (float& x : s.v) x = nd(rng);
  for (float x : s.k) s.k16.push_back(f32_to_fp16(x));
  for (float x : s.v) s.v16.push_back(f32_to_fp16(x));
  const std::int64_t w = s.shape.kv_heads * s.shape.head_dim;
  const std::size_t rb = kv_row_bytes(KvType::Q8_0, w);
  s.k8.resize(cells * rb);
  s.v8.resize(cells * rb);
  for (std::size_t c = 0; c < cells; ++c) {
    quant::quantize_row_q8_0(s.k.data() + c * w, s.k8.data() + c * rb, w);
    quant::quantize_row_q8_0(s.v.data() + c * w, s.v8.data() + c * rb, w);
  }
  s.offsets.push_back(0);
  for (std::int64_t t = 0; t < n; ++t) {
    for (std::int64_t c = 0; c <= depth + t; ++c) s.cells.push_back(static_cast<std::uint32_t>(c));
    s.offsets.push_back(static_cast<std::uint32_t>(s.cells.size()));
  }
  return s;
}

void BM_AttentionReference(benchmark::State& st) {
  Setup s = make(st.range(0), st.range(1), st.range(2));
  const AttentionArgs a = s.args(KvType::F32);
  const std::int32_t heads = a.n_head;
  ThreadPool pool(bench_threads());
  for (auto _ : st) {
    pool.parallel_for(static_cast<std::size_t>(a.n_tokens) * heads, 1,
                      [&](std::size_t b, std::size_t e) {
                        thread_local std::vector<float> scores, row;
                        for (std::size_t i = b; i < e; ++i)
                          ops::attention_head(a, static_cast<std::int64_t>(i / heads),
                                              static_cast<std::int32_t>(i % heads), scores, row);
                      });
    benchmark::DoNotOptimize(s.out.data());
  }
  st.SetItemsProcessed(st.iterations() * a.n_tokens);
}

void tiled(benchmark::State& st, KvType type, CpuLevel level = active_cpu_level()) {
  Setup s = make(st.range(0), st.range(1), st.range(2));
  const AttentionArgs a = s.args(type);
  ThreadPool pool(bench_threads());
  AttentionScratch scratch;
  for (auto _ : st) {
    attention_tiled(a, pool, scratch, level);
    benchmark::DoNotOptimize(s.out.data());
  }
  st.SetItemsProcessed(st.iterations() * a.n_tokens);
}

void BM_AttentionTiledF32(benchmark::State& st) { tiled(st, KvType::F32); }
void BM_AttentionTiledF16(benchmark::State& st) { tiled(st, KvType::F16); }
void BM_AttentionTiledQ8_0(benchmark::State& st) { tiled(st, KvType::Q8_0); }
void BM_AttentionTiledF16Scalar(benchmark::State& st) { tiled(st, KvType::F16, CpuLevel::Scalar); }

// {depth, rows, shape}: decode at 4096, prefill of 64 rows at 0 and 4096 (135M);
// decode at 4096 and 32768 and prefill of 64 rows at 4096 (1B: its 8 kv heads'
// cache, 8.4 MB a layer, is read from L3 by every tile of rows); decode at 4096
// and 32768 (Gemma 2 2B); decode at 4096 and 131072 (Gemma 3 1B: its one kv
// head needs that many cells to pass L3).
#define SHAPES                        \
  ->Args({4096, 1, 0})                \
      ->Args({0, 64, 0})              \
      ->Args({4096, 64, 0})           \
      ->Args({4096, 1, 1})            \
      ->Args({4096, 64, 1})           \
      ->Args({32768, 1, 1})           \
      ->Args({4096, 1, 2})            \
      ->Args({32768, 1, 2})           \
      ->Args({4096, 1, 3})            \
      ->Args({131072, 1, 3})          \
      ->Unit(benchmark::kMillisecond) \
      ->UseRealTime()
BENCHMARK(BM_AttentionReference) SHAPES;
BENCHMARK(BM_AttentionTiledF32) SHAPES;
BENCHMARK(BM_AttentionTiledF16) SHAPES;
BENCHMARK(BM_AttentionTiledQ8_0) SHAPES;
BENCHMARK(BM_AttentionTiledF16Scalar) SHAPES;

}  // namespace
}  // namespace seam
