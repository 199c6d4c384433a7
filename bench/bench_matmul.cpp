// matmul throughput at a 7B-class shape (4096 x 4096), reported as GB/s of
// weight bytes read. Decode (1 token) is bound by memory bandwidth (~10-16 GB/s
// on the Zen3 dev box, see shared/tools/membw.c); prefill tiles (64 tokens) reuse
// each weight block across tokens and become compute bound. 4 tokens sits near
// the token count where the AVX-512 GEMM starts to pay (dot.h GemmFns::min_tokens).
//
//   bench_kernels --benchmark_filter=Matmul
//   SEAM_BENCH_THREADS=1 bench_kernels     (default: one thread per core)
//   SEAM_CPU=avx2 bench_kernels            (a lower kernel level; the label names it)
//   SEAM_BENCH_CACHED=1 bench_kernels      (one copy of the weights, read from the
//                                           caches: the kernel's own ceiling, apart
//                                           from DRAM's)
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "compute/dot.h"
#include "compute/interleave.h"
#include "compute/matmul.h"
#include "compute/quant.h"
#include "compute/quant_blocks.h"
#include "core/half.h"
#include "core/thread_pool.h"
#include "seam/cpu.h"

namespace seam {
namespace {

constexpr std::int64_t kN = 4096;
// Enough distinct weight copies that the set is larger than the L3 cache
// (32 MiB on Zen3), so every iteration streams its weights from DRAM.
constexpr std::size_t kMinWorkingSet = 160u << 20;

// Random quant bytes with every fp16 scale field set to a sane value, so the
// kernels see realistic (finite) data; float types get N(0, 1) values.
std::vector<std::byte> make_weights(TensorType t, std::int64_t rows, std::int64_t cols) {
  std::mt19937 rng(42);
  const quant::TypeTraits& tr = *quant::traits(t);
  const std::size_t row = quant::row_size(t, cols);
  std::vector<std::byte> buf(row * rows);
  if (t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> x(cols);
    for (std::int64_t r = 0; r < rows; ++r) {
      for (float& v : x) v = nd(rng);
      quant::quantize_row(t, x.data(), buf.data() + r * row, cols);
    }
    return buf;
  }
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& b : buf) b = static_cast<std::byte>(byte(rng));
  std::size_t d_off = 0, dmin_off = SIZE_MAX;
  switch (t) {
    case TensorType::Q2_K:
      d_off = offsetof(quant::BlockQ2_K, d), dmin_off = d_off + 2;
      break;
    case TensorType::Q3_K:
      d_off = offsetof(quant::BlockQ3_K, d);
      break;
    case TensorType::Q6_K:
      d_off = offsetof(quant::BlockQ6_K, d);
      break;
    case TensorType::Q4_1:
    case TensorType::Q5_1:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
      dmin_off = 2;
      break;
    default:
      break;
  }
  if (t == TensorType::MXFP4) {  // an E8M0 exponent byte: 2^(120 - 127) per block
    for (std::size_t b = 0; b < buf.size() / tr.type_size; ++b)
      buf[b * tr.type_size] = std::byte{120};
    return buf;
  }
  const std::uint16_t h = f32_to_fp16(0.01f);
  for (std::size_t b = 0; b < buf.size() / tr.type_size; ++b) {
    std::memcpy(buf.data() + b * tr.type_size + d_off, &h, 2);
    if (dmin_off != SIZE_MAX) std::memcpy(buf.data() + b * tr.type_size + dmin_off, &h, 2);
  }
  return buf;
}

int bench_threads() {
  const char* s = std::getenv("SEAM_BENCH_THREADS");
  return s ? std::atoi(s) : 0;
}

bool bench_cached() {
  const char* s = std::getenv("SEAM_BENCH_CACHED");
  return s && std::strcmp(s, "0") != 0;
}

// range(2) = 1: the weights interleaved 16 rows at a time, as the loader lays
// them out for the types the level has group kernels for.
void BM_Matmul(benchmark::State& state) {
  const auto type = static_cast<TensorType>(state.range(0));
  const std::int64_t n_tok = state.range(1);
  const bool interleaved = state.range(2) == 1;
  std::vector<std::byte> one = make_weights(type, kN, kN);
  if (interleaved) interleave::pack_in_place(type, kN, kN, one.data());
  const std::size_t copies =
      bench_cached() ? 1 : std::max<std::size_t>(1, kMinWorkingSet / one.size());
  std::vector<std::vector<std::byte>> w(copies, one);
  std::vector<float> x(n_tok * kN), y(n_tok * kN);
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (float& v : x) v = nd(rng);
  ThreadPool pool(bench_threads());
  MatmulScratch scratch;
  const std::size_t row = quant::row_size(type, kN);
  std::size_t i = 0;
  for (auto _ : state) {
    WeightView wv{type, kN, kN, w[i].data(), row};
    wv.interleaved16 = interleaved;
    matmul(wv, x.data(), n_tok, y.data(), kN, pool, scratch);
    benchmark::DoNotOptimize(y.data());
    i = (i + 1) % copies;
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(one.size()));
  state.counters["tok/s"] =
      benchmark::Counter(static_cast<double>(n_tok), benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(quant::type_name(type) + (interleaved ? " interleaved " : " ") + cpu_level() +
                 " threads " + std::to_string(pool.size()) + (copies == 1 ? " cached" : ""));
}

void Shapes(benchmark::internal::Benchmark* b) {
  for (TensorType t : {TensorType::Q4_K, TensorType::Q6_K, TensorType::Q8_0, TensorType::Q4_0,
                       TensorType::MXFP4, TensorType::F16, TensorType::F32}) {
    for (int n_tok : {1, 4, 8, 12, 16, 64}) b->Args({static_cast<std::int64_t>(t), n_tok, 0});
  }
  // The K-quants of the Q3_K_M, Q4_K_M and Q5_K_M mixes as the loader lays them out.
  for (TensorType t : {TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K})
    for (int n_tok : {1, 16, 64}) b->Args({static_cast<std::int64_t>(t), n_tok, 1});
  // The rest of the 576-wide models' mixes (Q5_0, Q5_1, IQ4_NL), Q4_1 and MXFP4
  // interleaved, around the token counts where the GEMM takes over.
  for (TensorType t : {TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::IQ4_NL,
                       TensorType::MXFP4})
    for (int n_tok : {1, 4, 8, 12, 16}) b->Args({static_cast<std::int64_t>(t), n_tok, 1});
}
BENCHMARK(BM_Matmul)->Apply(Shapes)->Unit(benchmark::kMillisecond)->UseRealTime();

// Activation quantization alone, 64 tokens: the part of a matmul call that does
// not read weights.
void BM_QuantizeQ8K(benchmark::State& state) {
  std::vector<float> x(64 * kN, 0.5f);
  std::vector<std::byte> q(64 * quant::row_size(TensorType::Q8_K, kN));
  for (auto _ : state) {
    quant::quantize_row(TensorType::Q8_K, x.data(), q.data(), 64 * kN);
    benchmark::DoNotOptimize(q.data());
  }
  state.SetItemsProcessed(state.iterations() * 64 * kN);
}
BENCHMARK(BM_QuantizeQ8K);

}  // namespace
}  // namespace seam

BENCHMARK_MAIN();
