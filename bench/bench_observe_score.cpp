// What the observer's per-token statistics cost on a Qwen-sized vocabulary:
// surprisal alone (max + log-sum-exp + the target) against surprisal, entropy,
// rank and the top 10 (observe/score.h).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "observe/score.h"

namespace {

constexpr std::size_t kVocab = 151936;

std::vector<float> random_row() {
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0.0f, 3.0f);
  std::vector<float> row(kVocab);
  for (float& x : row) x = d(rng);
  return row;
}

void BM_ScoreSurprisalOnly(benchmark::State& state) {
  const std::vector<float> row = random_row();
  for (auto _ : state) {
    const float mx = *std::max_element(row.begin(), row.end());
    double z = 0;
    for (float l : row) z += std::exp(static_cast<double>(l) - mx);
    benchmark::DoNotOptimize(std::log(z) + mx - row[1234]);
  }
}
BENCHMARK(BM_ScoreSurprisalOnly);

void BM_ScoreFullTop10(benchmark::State& state) {
  const std::vector<float> row = random_row();
  for (auto _ : state) benchmark::DoNotOptimize(seam::observe::score_row(row, 1234, 10));
}
BENCHMARK(BM_ScoreFullTop10);

}  // namespace
