// Welford and EWMA against two-pass computations; the trigger gate on
// synthetic z sequences.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "observe/stats.h"

namespace seam::observe {
namespace {

std::vector<double> random_values(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  // Surprisal-like: a large offset over a small spread is where naive
  // one-pass variance (E[x^2] - E[x]^2) loses its digits.
  std::normal_distribution<double> d(1000.0, 3.0);
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  return v;
}

TEST(Welford, MatchesTwoPassOnLongRandomSequences) {
  for (unsigned seed : {1u, 2u, 3u}) {
    const std::vector<double> v = random_values(200000, seed);
    Welford w;
    for (double x : v) w.add(x);
    long double sum = 0;
    for (double x : v) sum += x;
    const long double mean = sum / v.size();
    long double ss = 0;
    for (double x : v) ss += (x - mean) * (x - mean);
    const long double var = ss / (v.size() - 1);
    // Welford's rounding error grows like n * eps relative to the values
    // (1000 * 2e5 * 1.1e-16 ~ 2e-8 on the mean); the variance (9) keeps ~1e-9.
    EXPECT_NEAR(w.mean(), static_cast<double>(mean), 1e-8);
    EXPECT_NEAR(w.variance(), static_cast<double>(var), 1e-6 * static_cast<double>(var));
    EXPECT_EQ(w.count(), v.size());
  }
}

TEST(Welford, FewerThanTwoValuesHaveZeroVariance) {
  Welford w;
  EXPECT_EQ(w.variance(), 0.0);
  w.add(5);
  EXPECT_EQ(w.mean(), 5.0);
  EXPECT_EQ(w.variance(), 0.0);
}

TEST(Ewma, MatchesExplicitWeightsOnLongRandomSequences) {
  for (std::uint32_t span : {1u, 8u, 64u, 1000u}) {
    const std::vector<double> v = random_values(20000, span);
    Ewma e(span);
    for (double x : v) e.add(x);
    // Two-pass: weight of value k (1-based) of n is a(1-a)^(n-k), the first (1-a)^(n-1).
    const long double a = 2.0L / (span + 1.0L);
    const std::size_t n = v.size();
    std::vector<long double> w(n);
    for (std::size_t k = 0; k < n; ++k)
      w[k] = (k == 0 ? 1.0L : a) * std::pow(1.0L - a, static_cast<long double>(n - 1 - k));
    long double sw = 0, mean = 0;
    for (std::size_t k = 0; k < n; ++k) {
      sw += w[k];
      mean += w[k] * v[k];
    }
    long double var = 0;
    for (std::size_t k = 0; k < n; ++k) var += w[k] * (v[k] - mean) * (v[k] - mean);
    EXPECT_NEAR(static_cast<double>(sw), 1.0, 1e-12);
    // The recursion forgets old rounding errors geometrically: relative 1e-12.
    EXPECT_NEAR(e.mean(), static_cast<double>(mean), 1e-12 * 1000) << span;
    if (span > 1) {
      EXPECT_NEAR(e.variance(), static_cast<double>(var), 1e-9 * static_cast<double>(var)) << span;
    } else {
      EXPECT_EQ(e.variance(), 0.0);  // alpha = 1: only the last value counts
    }
  }
}

// Runs the gate over z values (every token scored) and returns the firing indices.
std::vector<std::uint64_t> fires(GateConfig c, const std::vector<double>& z) {
  TriggerGate g(c);
  std::vector<std::uint64_t> out;
  for (std::uint64_t i = 0; i < z.size(); ++i)
    if (g.decide(i, i, z[i])) out.push_back(i);
  return out;
}

TEST(TriggerGate, WarmupSuppressesEarlyPeaks) {
  std::vector<double> z(50, 0.0);
  z[5] = 10;   // inside warm-up (5 scored before it < 10)
  z[10] = 10;  // first allowed: 10 scored before it
  z[30] = 10;
  EXPECT_EQ(fires({3.0, 1.0, 10, 0}, z), (std::vector<std::uint64_t>{10, 30}));
}

TEST(TriggerGate, CooldownSpacesTriggers) {
  std::vector<double> z(100, 0.0);
  for (std::size_t i : {10u, 15u, 29u, 30u, 31u, 60u}) z[i] = 5;
  // cooldown 20 after 10: 15 and 29 are too close, 30 is exactly 20 later.
  EXPECT_EQ(fires({3.0, 1.0, 0, 20}, z), (std::vector<std::uint64_t>{10, 30, 60}));
}

TEST(TriggerGate, HysteresisGivesOneTriggerPerPassage) {
  // A passage that stays above z_rearm re-crosses z many times: one trigger.
  std::vector<double> z = {0, 0, 4, 2, 4, 2.5, 5, 1.5, 4, 0.5, 4, 0, 0, 3.5};
  // Re-armed at index 9 (0.5 < 1): 10 fires; 11 re-arms; 13 fires.
  EXPECT_EQ(fires({3.0, 1.0, 0, 0}, z), (std::vector<std::uint64_t>{2, 10, 13}));
  // Without hysteresis (z_rearm = z): every crossing after a dip below 3.
  EXPECT_EQ(fires({3.0, 3.0, 0, 0}, z), (std::vector<std::uint64_t>{2, 4, 6, 8, 10, 13}));
}

TEST(TriggerGate, ReArmingHappensDuringCooldownToo) {
  std::vector<double> z(40, 0.0);
  z[5] = 6;
  z[6] = 0;   // re-arms here, inside the cool-down
  z[20] = 6;  // cool-down (10) over and armed: fires
  EXPECT_EQ(fires({3.0, 1.0, 0, 10}, z), (std::vector<std::uint64_t>{5, 20}));
}

TEST(TriggerGate, ExactlyAtThresholdDoesNotFire) {
  EXPECT_TRUE(fires({3.0, 1.0, 0, 0}, {3.0, 2.0, 3.0000001}) == (std::vector<std::uint64_t>{2}));
}

TEST(SpanMean, MeanOfTheLastN) {
  SpanMean s(3);
  s.add(1);
  EXPECT_DOUBLE_EQ(s.mean(), 1);
  s.add(2);
  s.add(3);
  EXPECT_TRUE(s.full());
  EXPECT_DOUBLE_EQ(s.mean(), 2);
  s.add(10);
  EXPECT_DOUBLE_EQ(s.mean(), 5);
}

}  // namespace
}  // namespace seam::observe
