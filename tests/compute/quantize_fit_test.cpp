// The four-lane scale searches give, group for group, the bits of the
// one-group searches they stand in for (the K-quants' output must stay byte
// for byte llama-quantize's, quantize_k_test; IQ4's the same as before): the same IEEE operations
// in the same order, so the comparison is of bits, on groups that take every branch.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "compute/quant_blocks.h"
#include "compute/quantize_fit.h"

namespace seam::quant {
namespace {

// Groups of n values: random ones at several scales, and the cases with a
// branch of their own in the searches.
std::vector<std::vector<float>> test_groups(int n) {
  std::mt19937 rng(977);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_real_distribution<float> uniform(0.f, 1.f);
  std::vector<std::vector<float>> groups;
  auto add = [&](auto value) {
    std::vector<float> g(n);
    for (int i = 0; i < n; ++i) g[i] = value(i);
    groups.push_back(g);
  };
  for (float scale : {1e-3f, 0.02f, 1.f, 300.f}) {
    for (int r = 0; r < 40; ++r) add([&](int) { return scale * normal(rng); });
  }
  for (int r = 0; r < 20; ++r) {  // one outlier
    add([&](int i) { return i == r % n ? 8.f : 0.05f * normal(rng); });
  }
  for (int r = 0; r < 20; ++r) {  // all positive, offset: the min clamps to 0
    add([&](int) { return 2.f + uniform(rng); });
  }
  for (int r = 0; r < 20; ++r) {  // all negative
    add([&](int) { return -1.f - uniform(rng); });
  }
  add([](int) { return 0.f; });                            // flat at zero
  add([](int) { return 0.75f; });                          // flat, positive
  add([](int) { return -0.75f; });                         // flat, negative
  add([](int) { return 1e-17f; });                         // below kGroupEps
  add([](int i) { return i % 2 ? 1e-20f : -1e-20f; });     // tiny, both signs
  add([](int i) { return i == 0 ? 1.f : 0.f; });           // one value apart
  add([n](int i) { return i < n / 2 ? -1.f : 1.f; });      // two levels
  add([](int i) { return static_cast<float>(i) - 7.f; });  // a ramp
  add([&](int i) {                                         // a subnormal among normals
    return i == 3 ? std::numeric_limits<float>::denorm_min() : 0.1f * normal(rng);
  });
  add([&](int i) { return i == 5 ? std::numeric_limits<float>::quiet_NaN() : normal(rng); });
  add([&](int i) { return i == 2 ? std::numeric_limits<float>::infinity() : normal(rng); });
  while (groups.size() % 4) add([&](int) { return normal(rng); });
  return groups;
}

std::uint32_t bits(float v) { return std::bit_cast<std::uint32_t>(v); }

struct MinFitCase {
  int n, nmax;
  float rmin, rdelta;
  int nstep;
  bool abs_error;
};

// Q4_K, Q5_K and Q2_K's parameters (Q2_K uses the levels), and the absolute
// error at n = 32.
const MinFitCase kMinFits[] = {{32, 15, -1.f, 0.1f, 20, false},
                               {32, 31, -0.5f, 0.1f, 15, false},
                               {16, 3, -0.5f, 0.1f, 15, true},
                               {32, 15, -1.f, 0.1f, 20, true}};

TEST(QuantizeFit, FourLanesGiveTheOneGroupFitsScaleAndMinBits) {
  for (const MinFitCase& c : kMinFits) {
    const auto groups = test_groups(c.n);
    for (std::size_t g0 = 0; g0 < groups.size(); g0 += 4) {
      std::vector<float> x(4 * c.n), w(4 * c.n);
      for (int g = 0; g < 4; ++g) {
        const auto& v = groups[g0 + g];
        float sum_x2 = 0;
        for (float e : v) sum_x2 += e * e;
        for (int i = 0; i < c.n; ++i) {
          x[c.n * g + i] = v[i];
          // Q4_K's weights for the squared error, Q2_K's |x| for the absolute.
          w[c.n * g + i] =
              c.abs_error ? std::fabs(v[i]) : std::sqrt(sum_x2 / c.n) + std::fabs(v[i]);
        }
      }
      float scale[4], min[4];
      fit_scale_min_x4(c.n, c.nmax, x.data(), w.data(), scale, min, c.rmin, c.rdelta, c.nstep,
                       c.abs_error);
      // With the levels asked for: the same scales and mins, and fit_scale_min's levels.
      float scale_l[4], min_l[4];
      std::vector<std::uint8_t> levels(4 * c.n, 0xAA);
      fit_scale_min_x4(c.n, c.nmax, x.data(), w.data(), scale_l, min_l, c.rmin, c.rdelta, c.nstep,
                       c.abs_error, levels.data());
      for (int g = 0; g < 4; ++g) {
        std::uint8_t L[32];
        float want_min = 0;
        const float want = fit_scale_min(c.n, c.nmax, x.data() + c.n * g, w.data() + c.n * g, L,
                                         &want_min, c.rmin, c.rdelta, c.nstep, c.abs_error);
        const std::string at = "n " + std::to_string(c.n) + " nmax " + std::to_string(c.nmax) +
                               (c.abs_error ? " abs" : "") + ", group " + std::to_string(g0 + g);
        EXPECT_EQ(bits(scale[g]), bits(want)) << at << ": " << scale[g] << " vs " << want;
        EXPECT_EQ(bits(min[g]), bits(want_min)) << at << ": " << min[g] << " vs " << want_min;
        EXPECT_EQ(bits(scale_l[g]), bits(want)) << at << " (levels asked for)";
        EXPECT_EQ(bits(min_l[g]), bits(want_min)) << at << " (levels asked for)";
        for (int i = 0; i < c.n; ++i) {
          EXPECT_EQ(int{levels[c.n * g + i]}, int{L[i]}) << at << ", level " << i;
        }
      }
    }
  }
}

TEST(QuantizeFit, FourLanesGiveTheOneGroupSymmetricScaleBits) {
  for (int n : {16, 32}) {
    const auto groups = test_groups(n);
    for (std::size_t g0 = 0; g0 < groups.size(); g0 += 4) {
      std::vector<float> x(4 * n);
      for (int g = 0; g < 4; ++g) {
        for (int i = 0; i < n; ++i) x[n * g + i] = groups[g0 + g][i];
      }
      float scale[4];
      fit_scale_sym_x4(n, 32, x.data(), scale);
      for (int g = 0; g < 4; ++g) {
        std::int8_t L[32];
        const float want = fit_scale_sym(n, 32, x.data() + n * g, L);
        EXPECT_EQ(bits(scale[g]), bits(want))
            << "n " << n << ", group " << g0 + g << ": " << scale[g] << " vs " << want;
      }
    }
  }
}

TEST(QuantizeFit, FourLanesGiveTheOneBlockIq4ScaleBits) {
  auto groups = test_groups(32);
  // Blocks whose first candidate scale (id = 127 / max = 1) puts values on the
  // midpoints between codes, where the tie rule decides.
  for (int r = 0; r < 4; ++r) {
    std::vector<float> ties(32);
    ties[0] = 127.f;
    for (int i = 1; i < 32; ++i) {
      const int k = (i + r) % 15;
      ties[i] = (kIQ4Values[k] + kIQ4Values[k + 1]) / 2.f;
    }
    groups.push_back(ties);
  }
  for (std::size_t g0 = 0; g0 < groups.size(); g0 += 4) {
    std::vector<float> x(4 * 32);
    for (int g = 0; g < 4; ++g) {
      for (int i = 0; i < 32; ++i) x[32 * g + i] = groups[g0 + g][i];
    }
    float scale[4];
    fit_scale_iq4_x4(x.data(), scale);
    for (int g = 0; g < 4; ++g) {
      const float want = fit_scale_iq4(x.data() + 32 * g);
      EXPECT_EQ(bits(scale[g]), bits(want))
          << "block " << g0 + g << ": " << scale[g] << " vs " << want;
    }
  }
}

// The code search, against the plain rule, and the four lanes' against it: the
// nearest codebook value, the higher of two at the same distance (distances
// in double, exact for these floats).
TEST(QuantizeFit, NearestIq4CodeIsTheNearestValueTheHigherOnATie) {
  std::vector<float> probes = {-1e9f, -200.f, -127.f, -126.9f, 113.f, 113.5f, 1e9f};
  for (int k = 0; k < 15; ++k) {
    const float a = kIQ4Values[k], b = kIQ4Values[k + 1];
    for (float v : {a, b, (a + b) / 2, std::nextafter((a + b) / 2, a),
                    std::nextafter((a + b) / 2, b), a + 0.25f * (b - a)})
      probes.push_back(v);
  }
  for (float v : probes) {
    int want = 0;
    for (int k = 1; k < 16; ++k) {
      const double here = std::fabs(double{v} - kIQ4Values[k]);
      if (here <= std::fabs(double{v} - kIQ4Values[want])) want = k;
    }
    EXPECT_EQ(nearest_iq4_code(v), want) << v;
  }
  probes.push_back(std::numeric_limits<float>::quiet_NaN());
  while (probes.size() % 4) probes.push_back(0.f);
  for (std::size_t i = 0; i < probes.size(); i += 4) {
    float lanes[4];
    nearest_iq4_values_x4(probes.data() + i, lanes);
    for (int g = 0; g < 4; ++g) {
      EXPECT_EQ(lanes[g], kIQ4Values[nearest_iq4_code(probes[i + g])]) << probes[i + g];
    }
  }
}

}  // namespace
}  // namespace seam::quant
