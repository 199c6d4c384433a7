// The row primitives of vec.h at every CPU level this machine runs, against
// the scalar definitions.
#include "compute/vec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/half.h"

namespace seam {
namespace {

class VecLevels : public ::testing::TestWithParam<CpuLevel> {
 protected:
  void SetUp() override {
    if (GetParam() > detected_cpu_level()) {
      GTEST_SKIP() << "this CPU runs up to " << cpu_level_name(detected_cpu_level());
    }
  }
};

// Any summation order of n products, each rounded once or fused, is within
// gamma_n = n u / (1 - n u) of sum |a b| (u = 2^-24) of the exact sum.
TEST_P(VecLevels, DotWithinTheSummationBound) {
  const vec::VecFns& f = vec::vec_fns(GetParam());
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (std::int64_t n : {0, 1, 7, 8, 15, 16, 17, 64, 127, 1000}) {
    std::vector<float> a(n), b(n);
    for (float& v : a) v = normal(rng);
    for (float& v : b) v = normal(rng);
    double exact = 0, mag = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      exact += double{a[i]} * b[i];
      mag += std::fabs(double{a[i]} * b[i]);
    }
    const double u = std::ldexp(1.0, -24), gamma = n * u / (1 - n * u);
    EXPECT_NEAR(f.dot_f32(a.data(), b.data(), n), exact, gamma * mag + 1e-30) << "n " << n;
  }
}

// y = a y + b x: each level rounds a y, b x and the sum (or fuses one product):
// within 2u (|a y| + |b x|) of the exact value.
TEST_P(VecLevels, ScaleAddWithinTwoRoundings) {
  const vec::VecFns& f = vec::vec_fns(GetParam());
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (std::int64_t n : {0, 1, 7, 8, 9, 16, 31, 128}) {
    std::vector<float> y(n), x(n);
    for (float& v : y) v = normal(rng);
    for (float& v : x) v = normal(rng);
    const float a = 0.73f, b = -1.9f;
    std::vector<float> got = y;
    f.scale_add(got.data(), a, b, x.data(), n);
    const double u = std::ldexp(1.0, -24);
    for (std::int64_t i = 0; i < n; ++i) {
      const double ay = double{a} * y[i], bx = double{b} * x[i];
      EXPECT_NEAR(got[i], ay + bx, 2 * u * (std::fabs(ay) + std::fabs(bx)))
          << "n " << n << " i " << i;
    }
  }
}

// gpt-oss's gate g sigmoid(1.702 g) (u + 1), g = min(gate, 7), u = clamp(up,
// -7, 7): the product 1.702 g moves sigmoid's argument by u |1.702 g|, which
// moves it relatively by at most that; the sigmoid, the sum and two products
// add under 12u. A NaN gate or up gives NaN, as std::min and std::clamp do.
TEST_P(VecLevels, SwigluOaiWithinItsRoundings) {
  const vec::VecFns& f = vec::vec_fns(GetParam());
  std::mt19937 rng(12);
  std::normal_distribution<float> normal(0.0f, 6.0f);
  const double u = std::ldexp(1.0, -24);
  for (std::int64_t n : {1, 7, 8, 9, 16, 17, 200}) {
    std::vector<float> g(static_cast<std::size_t>(n)), up(g.size()), out(g.size());
    for (float& v : g) v = normal(rng);
    for (float& v : up) v = normal(rng);
    f.swiglu_oai_mul(g.data(), up.data(), n, out.data());
    for (std::size_t i = 0; i < g.size(); ++i) {
      const double gc = std::min(double{g[i]}, 7.0), uc = std::clamp(double{up[i]}, -7.0, 7.0);
      const double ref = gc / (1 + std::exp(-1.702 * gc)) * (uc + 1);
      const double bound =
          (12 * u + u * std::fabs(1.702 * gc)) * std::fabs(ref) + std::fabs(gc * (uc + 1)) * 1e-37;
      EXPECT_NEAR(out[i], ref, bound) << "g " << g[i] << " up " << up[i];
    }
    std::vector<float> in_place = g;
    f.swiglu_oai_mul(in_place.data(), up.data(), n, in_place.data());
    EXPECT_EQ(in_place, out);
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> g = {nan, 1.0f, 2.0f}, up = {1.0f, nan, 50.0f}, out(3);
  f.swiglu_oai_mul(g.data(), up.data(), 3, out.data());
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_TRUE(std::isnan(out[1]));
  EXPECT_NEAR(out[2], 2.0 / (1 + std::exp(-3.404)) * 8, 1e-5);
}

// silu is silu_mul with up = 1 (multiplying by 1 is exact); sigmoid's e, 1 + e
// and quotient round within 8u of it (e^x taken as 0 below -87); the soft cap
// cap tanh(x / cap) from e = e^-2|y|: (1 - e) / (1 + e) is within a few u of
// tanh absolutely (1 - e cancels near 0) and relatively elsewhere, so within
// 8u (|ref| + cap).
TEST_P(VecLevels, SiluSigmoidAndSoftCapWithinTheirRoundings) {
  const vec::VecFns& f = vec::vec_fns(GetParam());
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  const double u = std::ldexp(1.0, -24);
  for (std::int64_t n : {1, 7, 8, 15, 16, 17, 100}) {
    std::vector<float> x(static_cast<std::size_t>(n));
    for (float& v : x) v = normal(rng);
    x[0] = n % 2 ? -95.0f : 0.0f;
    std::vector<float> ones(x.size(), 1.0f), silu(x.size()), want(x.size()), sig(x.size());
    f.silu(x.data(), n, silu.data());
    f.silu_mul(x.data(), ones.data(), n, want.data());
    EXPECT_EQ(silu, want) << "n " << n;
    f.sigmoid(x.data(), n, sig.data());
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double ref = 1 / (1 + std::exp(-double{x[i]}));
      EXPECT_NEAR(sig[i], ref, 8 * u * ref + std::exp(-87.0)) << "x " << x[i];
    }
    for (float cap : {1.0f, 30.0f}) {
      std::vector<float> capped = x;
      f.softcap(capped.data(), n, cap);
      for (std::size_t i = 0; i < x.size(); ++i) {
        const double ref = cap * std::tanh(double{x[i]} / cap);
        EXPECT_NEAR(capped[i], ref, 8 * u * (std::fabs(ref) + cap))
            << "x " << x[i] << " cap " << cap;
      }
    }
  }
}

// One row of the gated delta rule: d = beta (v - decay (s . k)), s' = decay s +
// d k, returns decay (s . q). Each dot is within gamma_n sum |s x| (as
// dot_f32), the product by decay one rounding more, v - that and beta's
// product one each; s' is scale_add's two roundings with the d it returned.
TEST_P(VecLevels, DeltaRowWithinItsRoundings) {
  const vec::VecFns& f = vec::vec_fns(GetParam());
  std::mt19937 rng(10);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const double u = std::ldexp(1.0, -24);
  const float decay = 0.93f, beta = 0.61f, v = 0.37f;
  for (std::int64_t n : {1, 7, 16, 17, 33, 64, 128, 130}) {
    std::vector<float> s(static_cast<std::size_t>(n)), k(s.size()), q(s.size());
    for (float& x : s) x = normal(rng);
    for (float& x : k) x = normal(rng);
    for (float& x : q) x = normal(rng);
    double sk = 0, sq = 0, mk = 0, mq = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      sk += double{s[i]} * k[i];
      sq += double{s[i]} * q[i];
      mk += std::fabs(double{s[i]} * k[i]);
      mq += std::fabs(double{s[i]} * q[i]);
    }
    const double gamma = static_cast<double>(n) * u / (1 - static_cast<double>(n) * u);
    std::vector<float> got = s;
    float d = 0.0f;
    const float ret = f.delta_row(got.data(), k.data(), q.data(), n, decay, beta, v, &d);
    EXPECT_NEAR(ret, decay * sq, decay * (gamma + u) * mq + 1e-30) << "n " << n;
    const double d_exact = beta * (v - decay * sk);
    EXPECT_NEAR(
        d, d_exact,
        beta * (decay * (gamma + 2 * u) * mk + 2 * u * std::fabs(v)) + 2 * u * std::fabs(d_exact))
        << "n " << n;
    for (std::size_t i = 0; i < s.size(); ++i) {
      const double ds = double{decay} * s[i], dk = double{d} * k[i];
      EXPECT_NEAR(got[i], ds + dk, 2 * u * (std::fabs(ds) + std::fabs(dk)))
          << "n " << n << " " << i;
    }
  }
}

// out = silu(g) u. The SIMD levels: e = e^-|g| within a few ulp (say 4u), then
// 1 + e, the quotient, and two products each round once: within (4 + 4) u of
// |silu(g) u| with room to spare. Below g = -87 every level may take e^g as 0
// (float exp underflows there), an absolute error under |g u| e^-87. Gates
// span the range where the sigmoid saturates either way; 0, +-inf and NaN
// behave as the scalar formula does.
TEST_P(VecLevels, SiluMulWithinItsRoundings) {
  const vec::VecFns& f = vec::vec_fns(GetParam());
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> wide(-100.0f, 100.0f);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const double u = std::ldexp(1.0, -24);
  auto bound = [&](float g, float up, double ref) {
    return 8 * u * std::fabs(ref) + std::fabs(double{g} * up) * std::exp(-87.0);
  };
  for (std::int64_t n : {0, 1, 7, 8, 9, 16, 31, 1000}) {
    std::vector<float> g(n), up(n), out(n);
    for (std::int64_t i = 0; i < n; ++i) {
      g[i] = i % 3 == 0 ? wide(rng) : normal(rng);
      up[i] = normal(rng);
    }
    f.silu_mul(g.data(), up.data(), n, out.data());
    for (std::int64_t i = 0; i < n; ++i) {
      const double ref = double{g[i]} / (1.0 + std::exp(-double{g[i]})) * up[i];
      EXPECT_NEAR(out[i], ref, bound(g[i], up[i], ref))
          << "n " << n << " g " << g[i] << " u " << up[i];
    }
  }
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> g = {0.0f, -0.0f, inf, -inf, std::nanf(""), 1.0f, -1.0f, 88.0f, -88.0f};
  std::vector<float> up(g.size(), 2.0f), got(g.size()), want(g.size());
  f.silu_mul(g.data(), up.data(), static_cast<std::int64_t>(g.size()), got.data());
  vec::vec_fns(CpuLevel::Scalar)
      .silu_mul(g.data(), up.data(), static_cast<std::int64_t>(g.size()), want.data());
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "g " << g[i];
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << "g " << g[i];
    } else {
      EXPECT_NEAR(got[i], want[i], bound(g[i], up[i], want[i])) << "g " << g[i];
    }
  }
  // An element's value does not depend on where it sits in the call (a prompt
  // read in one batch and token by token must give the same activations).
  for (std::size_t i = 0; i < g.size(); ++i) {
    float alone;
    f.silu_mul(&g[i], &up[i], 1, &alone);
    if (!std::isnan(got[i])) {
      EXPECT_EQ(alone, got[i]) << "g " << g[i];
    }
  }
  // In place, as the forward pass calls it (out = gate).
  std::vector<float> gate = {0.5f, -2.0f, 3.0f, 0.1f, -0.7f, 9.0f, -12.0f, 1.5f, 0.25f};
  std::vector<float> expect(gate.size());
  f.silu_mul(gate.data(), up.data(), static_cast<std::int64_t>(gate.size()), expect.data());
  f.silu_mul(gate.data(), up.data(), static_cast<std::int64_t>(gate.size()), gate.data());
  EXPECT_EQ(gate, expect);
}

// gelu(g) up = g sigmoid(t) up, t = 2 sqrt(2/pi) (g + 0.044715 g^3), against
// float64. Rounding t's few operations moves it by dt <= 4u (|k g| + 2 |k c
// g^3|) (k = 2 sqrt(2/pi), c = 0.044715), which moves sigmoid(t) by a
// relative (1 - sigmoid(t)) dt <= dt; the exp (a few ulp), the division and
// the two products add under 12u. Below t = -87 the exp is 0: the result may
// be 0 where the exact one is below |g up| e^-87.
TEST_P(VecLevels, GeluMulWithinItsRoundings) {
  const vec::VecFns& f = vec::vec_fns(GetParam());
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> wide(-12.0f, 12.0f);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  const double u = std::ldexp(1.0, -24), k = 2 * std::sqrt(2 / M_PI), c = 0.044715;
  // 0.5 (1 + tanh(z)) as 1 / (1 + e^-2z): no cancellation where tanh(z) is near -1.
  const auto exact = [&](double g, double up) {
    return g / (1 + std::exp(-k * (g + c * g * g * g))) * up;
  };
  const auto bound = [&](double g, double up, double ref) {
    const double dt = 4 * u * (std::fabs(k * g) + 2 * std::fabs(k * c * g * g * g));
    return (12 * u + dt) * std::fabs(ref) + std::fabs(g * up) * std::exp(-87.0);
  };
  for (std::int64_t n : {0, 1, 7, 8, 9, 16, 17, 31, 1000}) {
    std::vector<float> g(static_cast<std::size_t>(n)), up(g.size()), out(g.size());
    for (std::size_t i = 0; i < g.size(); ++i) {
      g[i] = i % 3 == 0 ? wide(rng) : normal(rng);
      up[i] = normal(rng);
    }
    f.gelu_mul(g.data(), up.data(), n, out.data());
    for (std::size_t i = 0; i < g.size(); ++i) {
      const double ref = exact(g[i], up[i]);
      EXPECT_NEAR(out[i], ref, bound(g[i], up[i], ref)) << "n " << n << " g " << g[i];
    }
  }
  // Each element alone gives what it gives in a call of many (batch
  // invariance), and in place (out = gate) as the forward pass calls it.
  std::vector<float> g = {0.0f, -0.0f, 1.0f, -1.0f, 5.0f, -5.0f, 30.0f, -30.0f, 0.3f, -7.5f};
  std::vector<float> up(g.size(), 1.5f), got(g.size());
  f.gelu_mul(g.data(), up.data(), static_cast<std::int64_t>(g.size()), got.data());
  for (std::size_t i = 0; i < g.size(); ++i) {
    float alone;
    f.gelu_mul(&g[i], &up[i], 1, &alone);
    EXPECT_EQ(alone, got[i]) << "g " << g[i];
    EXPECT_NEAR(got[i], exact(g[i], up[i]), bound(g[i], up[i], exact(g[i], up[i]))) << g[i];
  }
  f.gelu_mul(g.data(), up.data(), static_cast<std::int64_t>(g.size()), g.data());
  EXPECT_EQ(g, got);
}

// Conversions are exact operations: the same bits as core/half.h's.
TEST_P(VecLevels, HalfConversionsMatchCoreHalf) {
  const vec::VecFns& f = vec::vec_fns(GetParam());
  std::mt19937 rng(6);
  std::uniform_int_distribution<std::uint32_t> bits;
  std::vector<float> x(1003);
  for (std::size_t i = 0; i < x.size(); ++i) {
    // Finite values across the whole f32 range (overflow, subnormal and zero
    // results included), plus infinities.
    float v;
    do {
      const std::uint32_t b = bits(rng);
      std::memcpy(&v, &b, 4);
    } while (!std::isfinite(v));
    if (v == 0.0f || i % 3 == 0) {
      x[i] = v;
    } else {
      x[i] =
          i % 3 == 1 ? v * 1e-30f : std::ldexp(v, -std::ilogb(v) + static_cast<int>(i % 40) - 30);
    }
  }
  x[0] = std::numeric_limits<float>::infinity();
  x[1] = -x[0];
  x[2] = 65519.99f;  // just below the rounding boundary to inf
  x[3] = 65520.0f;   // rounds to inf
  std::vector<std::uint16_t> h(x.size());
  f.f32_to_f16(x.data(), h.data(), static_cast<std::int64_t>(x.size()));
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(h[i], f32_to_fp16(x[i])) << "x " << x[i] << " i " << i;
  }
  std::vector<std::uint16_t> all(65536);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint16_t>(i);
  std::vector<float> y(all.size());
  f.f16_to_f32(all.data(), y.data(), static_cast<std::int64_t>(all.size()));
  for (std::size_t i = 0; i < all.size(); ++i) {
    const float want = fp16_to_f32(all[i]);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(y[i])) << i;
    } else {
      ASSERT_EQ(std::memcmp(&y[i], &want, 4), 0) << "h " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, VecLevels,
                         ::testing::Values(CpuLevel::Scalar, CpuLevel::Avx2, CpuLevel::Avx512),
                         [](const auto& info) { return std::string(cpu_level_name(info.param)); });

}  // namespace
}  // namespace seam
