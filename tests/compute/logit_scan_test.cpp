// The logits scan (compute/logit_scan.h) at every CPU level this machine runs,
// against the double-precision scalar reference: the max, rank and top-k ids
// exactly; the sums within the bound that float exp implies.
#include "compute/logit_scan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace seam {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

class ScanLevels : public ::testing::TestWithParam<CpuLevel> {
 protected:
  void SetUp() override {
    if (GetParam() > detected_cpu_level()) {
      GTEST_SKIP() << "this CPU runs up to " << cpu_level_name(detected_cpu_level());
    }
  }
};

// The exp inside the scan, read back through sum_exp_d: a row {0, x} has
// max 0 and sum_exp_d = e^0 * 0 + e^x * x (one double product, so e^x comes
// back to 2^-52). Its relative error must stay within kExpRelErr on [-87, 0].
TEST_P(ScanLevels, ExpWithinItsStatedError) {
  const logit::ScanFn scan = logit::scan_fn(GetParam());
  double worst = 0;
  std::uint32_t top[1];
  for (int i = 1; i <= 200000; ++i) {
    const float x = -87.0f * static_cast<float>(i) / 200000.0f;
    const float row[2] = {0.0f, x};
    const logit::Scan s = scan(row, 2, 0, 0, top);
    const double got = s.sum_exp_d / static_cast<double>(x);
    const double want = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::fabs(got / want - 1));
  }
  EXPECT_LE(worst, logit::kExpRelErr);
  std::printf("%s: worst exp relative error %.3g (%.2f ulp of 2^-24)\n", cpu_level_name(GetParam()),
              worst, worst * (1 << 24));
}

// For d_v = l_v - max: the float difference is within |d| u (u = 2^-24) and
// exp within kExpRelErr = e, so each term e^d carries a relative error below
// e + u |d|; the double sums add ~n 2^-53 of their magnitude. Hence
//   |Z' - Z| <= e Z + u sum e^d |d| + n 2^-52 Z,
//   |S' - S| <= e sum e^d |d| + u sum e^d d^2 + n 2^-52 sum e^d |d|
// (S = sum e^d d; the d in S is exact in double).
void expect_scan_matches(CpuLevel level, const std::vector<float>& row, std::uint32_t t,
                         std::uint32_t k, const std::string& what) {
  const std::size_t n = row.size();
  const std::size_t kk = std::min<std::size_t>(k, n);
  std::vector<std::uint32_t> ref_top(kk + 1, 999999u), got_top(kk + 1, 999999u);
  const logit::Scan ref = logit::scalar::scan(row.data(), n, t, k, ref_top.data());
  const logit::Scan got = logit::scan_fn(level)(row.data(), n, t, k, got_top.data());
  EXPECT_EQ(got.max, ref.max) << what;
  EXPECT_EQ(got.above, ref.above) << what;
  EXPECT_EQ(got_top, ref_top) << what;  // the last entry: nothing written past k
  double t1 = 0, t2 = 0;
  for (float l : row) {
    if (!(l > -kInf)) continue;
    const double d = static_cast<double>(l) - ref.max;
    t1 += std::exp(d) * -d;
    t2 += std::exp(d) * d * d;
  }
  const double e = logit::kExpRelErr, u = 1.0 / (1 << 24);
  const double dbl = static_cast<double>(n) * std::ldexp(1.0, -52);
  EXPECT_NEAR(got.sum_exp, ref.sum_exp, e * ref.sum_exp + u * t1 + dbl * ref.sum_exp + 1e-300)
      << what;
  EXPECT_NEAR(got.sum_exp_d, ref.sum_exp_d, e * t1 + u * t2 + dbl * t1 + 1e-300) << what;
}

TEST_P(ScanLevels, RandomRowsMatchTheReference) {
  std::mt19937 rng(11);
  for (std::size_t n : {1u, 2u, 7u, 8u, 9u, 15u, 16u, 17u, 100u, 2048u, 50021u}) {
    for (float sd : {0.5f, 3.0f, 20.0f}) {
      std::normal_distribution<float> normal(0.0f, sd);
      std::vector<float> row(n);
      for (float& x : row) x = normal(rng);
      std::uniform_int_distribution<std::uint32_t> pick(0, static_cast<std::uint32_t>(n - 1));
      for (std::uint32_t k : {0u, 1u, 5u, 10u, 64u, 65u}) {
        const std::uint32_t t = pick(rng);
        expect_scan_matches(GetParam(), row, t, k,
                            "n=" + std::to_string(n) + " sd=" + std::to_string(sd) +
                                " k=" + std::to_string(k) + " t=" + std::to_string(t));
      }
    }
  }
}

// Ties (rank and top-k order by id), -inf and NaN entries, a NaN target, and a
// spread past e^-87 (terms that count as 0).
TEST_P(ScanLevels, TiesInfinitiesAndNaNs) {
  std::mt19937 rng(3);
  for (std::size_t n : {3u, 8u, 13u, 40u, 1001u}) {
    std::uniform_int_distribution<int> small(-3, 3);
    std::vector<float> row(n);
    for (float& x : row) x = static_cast<float>(small(rng));  // many equal logits
    row[n / 2] = -kInf;
    row[n - 1] = std::numeric_limits<float>::quiet_NaN();
    if (n > 10) row[5] = -200.0f;  // e^-203 of the max
    for (std::uint32_t t = 0; t < n; t += (n > 50 ? 37 : 1))
      for (std::uint32_t k : {1u, 3u, 10u, static_cast<std::uint32_t>(n)})
        expect_scan_matches(
            GetParam(), row, t, k,
            "n=" + std::to_string(n) + " t=" + std::to_string(t) + " k=" + std::to_string(k));
  }
  // Fewer finite logits than k: -inf and NaN fill the list by id.
  std::vector<float> few = {
      -kInf, 2.0f, std::numeric_limits<float>::quiet_NaN(), -kInf, 1.0f, -kInf, -kInf, -kInf,
      -kInf, 0.5f};
  for (std::uint32_t t = 0; t < few.size(); ++t) expect_scan_matches(GetParam(), few, t, 8, "few");
}

INSTANTIATE_TEST_SUITE_P(Levels, ScanLevels,
                         ::testing::Values(CpuLevel::Scalar, CpuLevel::Avx2, CpuLevel::Avx512),
                         [](const auto& info) { return std::string(cpu_level_name(info.param)); });

}  // namespace
}  // namespace seam
