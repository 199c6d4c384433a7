// One dot kernel alone, one token (decode), at each CPU level side by side, on
// weights that stay in the L2 cache: the compute cost per weight byte with
// DRAM out of the picture. Decode is at the bandwidth limit only when this
// rate is well above one core's share of DRAM bandwidth (membw.c / threads).
// Reported as weight bytes per second of CPU time.
//
//   bench_kernels --benchmark_filter=DotRow
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "compute/dot.h"
#include "compute/quant.h"
#include "compute/quantize_k.h"
#include "seam/cpu.h"

namespace seam {
namespace {

constexpr std::int64_t kCols = 2048;              // a 1B-class hidden size
constexpr std::size_t kWeightBytes = 256u << 10;  // well inside L2 on Zen 3/4 and Sapphire Rapids

void BM_DotRow(benchmark::State& state) {
  const auto type = static_cast<TensorType>(state.range(0));
  const auto level = static_cast<CpuLevel>(state.range(1));
  if (level > detected_cpu_level()) {
    state.SkipWithError("CPU level not supported here");
    return;
  }
  if (!quant::can_quantize_weight(type)) {
    state.SkipWithError("this build cannot write the type");
    return;
  }
  const quant::TypeTraits& tr = *quant::traits(type);
  const std::size_t row = quant::row_size(type, kCols);
  const std::int64_t rows = static_cast<std::int64_t>(kWeightBytes / row);
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(kCols);
  std::vector<std::byte> w(row * rows);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (float& v : x) v = nd(rng);
    quant::quantize_weight_row(type, x.data(), w.data() + r * row, kCols);
  }
  for (float& v : x) v = nd(rng);
  const std::size_t arow =
      tr.dot_type == TensorType::F32 ? kCols * sizeof(float) : quant::row_size(tr.dot_type, kCols);
  std::vector<std::byte> act(arow);
  if (tr.dot_type == TensorType::F32) {
    std::memcpy(act.data(), x.data(), arow);
  } else {
    quant::quantize_row(tr.dot_type, x.data(), act.data(), kCols);
  }
  // At the AVX-512 level matmul runs the prepared-row kernels where a type has them.
  dot::DotFn fn = tr.dot.at(level);
  const dot::RowFns* rf = level >= CpuLevel::Avx512 ? tr.dot.rows512 : nullptr;
  std::size_t astride = arow;
  if (rf) {
    std::vector<std::byte> prepared(rf->act_bytes(kCols));
    rf->prepare(kCols, act.data(), prepared.data());
    act = std::move(prepared);
    astride = rf->act_bytes(kCols);
    fn = rf->dot;
  }
  std::vector<float> out(rows);
  for (auto _ : state) {
    for (std::int64_t r = 0; r < rows; ++r) {
      fn(kCols, w.data() + r * row, act.data(), astride, 1, out.data() + r, 1);
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(row * rows));
  state.SetLabel(quant::type_name(type) + " " + cpu_level_name(level));
}

void DotShapes(benchmark::internal::Benchmark* b) {
  for (TensorType t :
       {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K,
        TensorType::Q5_0, TensorType::IQ4_NL, TensorType::F16, TensorType::BF16}) {
    for (CpuLevel l : {CpuLevel::Avx2, CpuLevel::Avx512}) {
      b->Args({static_cast<std::int64_t>(t), static_cast<std::int64_t>(l)});
    }
  }
}
BENCHMARK(BM_DotRow)->Apply(DotShapes);

}  // namespace
}  // namespace seam
