// The gated-delta-net kernels (compute/recurrent_ops.h, CpuBackend) against
// float64 implementations written from the math, at every CPU level this
// machine runs (the delta rule's rows use the dispatched dot product).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "compute/backend.h"
#include "compute/cpu_level.h"
#include "compute/recurrent_ops.h"

namespace seam {
namespace {

const double u = std::ldexp(1.0, -24);  // float's unit roundoff

std::vector<float> randn(std::mt19937& rng, std::size_t n, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

double softplus64(double x) {
  return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}
double sigmoid64(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double silu64(double x) { return x * sigmoid64(x); }

// Inputs over the whole useful range, including both sides of softplus's x = 20 switch.
std::vector<float> element_inputs() {
  std::vector<float> x = {0.0f,   -0.0f, 1e-30f, -1e-30f, 19.99f, 20.0f,
                          20.01f, 30.0f, -30.0f, 80.0f,   -80.0f};
  for (int i = -400; i <= 400; ++i) x.push_back(static_cast<float>(i) * 0.17f);
  return x;
}

// expf, log1pf and each +, / are within 1 ulp (glibc): four roundings bound
// every map here relatively; the absolute term covers results below FLT_MIN.
void expect_close(float got, double exact, const std::string& what) {
  EXPECT_NEAR(got, exact, 4 * u * std::abs(exact) + 1e-37) << what;
}

TEST(RecurrentOps, SoftplusSigmoidSiluMatchFloat64) {
  CpuBackend be(1);
  const std::vector<float> x = element_inputs();
  const std::int64_t n = static_cast<std::int64_t>(x.size());
  std::vector<float> sp(x.size()), sg(x.size()), sl(x.size());
  be.softplus(x.data(), n, sp.data());
  be.sigmoid(x.data(), n, sg.data());
  be.silu(x.data(), n, sl.data());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::string at = "x = " + std::to_string(x[i]);
    expect_close(sp[i], softplus64(x[i]), "softplus " + at);
    expect_close(sg[i], sigmoid64(x[i]), "sigmoid " + at);
    expect_close(sl[i], silu64(x[i]), "silu " + at);
  }
}

TEST(RecurrentOps, ElementMapsStayFiniteAtExtremes) {
  CpuBackend be(1);
  const float big = std::numeric_limits<float>::max();
  const std::vector<float> x = {-big, -1e4f, -200.0f, 200.0f, 1e4f, big};
  std::vector<float> sp(x.size()), sg(x.size());
  be.softplus(x.data(), 6, sp.data());
  be.sigmoid(x.data(), 6, sg.data());
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_TRUE(std::isfinite(sp[i]) && sp[i] >= 0.0f) << x[i] << " -> " << sp[i];
    EXPECT_TRUE(sg[i] >= 0.0f && sg[i] <= 1.0f) << x[i] << " -> " << sg[i];
  }
  EXPECT_EQ(sp[5], big);  // softplus(x) = x for large x, no overflow through e^x
  EXPECT_EQ(sg[0], 0.0f);
  EXPECT_EQ(sg[5], 1.0f);
}

TEST(RecurrentOps, L2NormRowsMatchFloat64AndEpsGuardsZero) {
  CpuBackend be(1);
  std::mt19937 rng(3);
  const std::int64_t rows = 5, n = 37;
  auto x = randn(rng, rows * n, 3.0f);
  std::fill(x.begin() + 2 * n, x.begin() + 3 * n, 0.0f);  // an all-zero row: eps, not 0/0
  x[4 * n] = 1e-7f;                                       // a row whose norm is below eps
  std::fill(x.begin() + 4 * n + 1, x.end(), 0.0f);
  std::vector<float> y(x.size());
  const float eps = 1e-6f;
  be.l2_norm(x.data(), rows, n, eps, y.data());
  for (std::int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (std::int64_t i = 0; i < n; ++i) ss += double(x[r * n + i]) * x[r * n + i];
    const double inv = 1.0 / std::max(std::sqrt(ss), double(eps));
    for (std::int64_t i = 0; i < n; ++i) {
      const double exact = x[r * n + i] * inv;
      // inv rounded to float, one product: 2u relative (+ the sum's double rounding).
      EXPECT_NEAR(y[r * n + i], exact, 2 * u * std::abs(exact) + 1e-37) << r << "," << i;
    }
  }
  EXPECT_NEAR(y[4 * n], 0.1, 0.1 * 2 * u);  // 1e-7 / eps
}

TEST(RecurrentOps, RmsNormGatedMatchesFloat64) {
  CpuBackend be(1);
  std::mt19937 rng(4);
  const std::int64_t rows = 6, n = 24;
  auto x = randn(rng, rows * n, 2.0f), z = randn(rng, rows * n, 3.0f), w = randn(rng, n);
  std::vector<float> y(x.size());
  const float eps = 1e-6f;
  be.rms_norm_gated(x.data(), w.data(), z.data(), rows, n, eps, y.data());
  for (std::int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (std::int64_t i = 0; i < n; ++i) ss += double(x[r * n + i]) * x[r * n + i];
    const double scale = 1.0 / std::sqrt(ss / n + eps);
    for (std::int64_t i = 0; i < n; ++i) {
      const double exact = x[r * n + i] * scale * w[i] * silu64(z[r * n + i]);
      // The scale's float rounding, three products and silu's four roundings: 8u.
      EXPECT_NEAR(y[r * n + i], exact, 8 * u * std::abs(exact) + 1e-37) << r << "," << i;
    }
  }
  // In place (the forward pass normalizes the delta rule's output where it lies).
  std::vector<float> inplace = x;
  be.rms_norm_gated(inplace.data(), w.data(), z.data(), rows, n, eps, inplace.data());
  for (std::size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(inplace[i], y[i], 8 * u * std::abs(y[i]));
}

// win = [state; x]; y[t][c] = sum_j w[c][j] win[t + j][c]; the new state is win's last K-1 rows.
struct Conv64 {
  std::vector<double> y, bound, state;
};
Conv64 conv64(const std::vector<float>& x, std::int64_t T, std::int64_t C,
              const std::vector<float>& w, int K, const std::vector<float>& state) {
  std::vector<double> win(state.begin(), state.end());
  win.insert(win.end(), x.begin(), x.end());
  Conv64 r;
  r.y.assign(T * C, 0.0);
  r.bound.assign(T * C, 0.0);
  for (std::int64_t t = 0; t < T; ++t) {
    for (std::int64_t c = 0; c < C; ++c) {
      double abs_sum = 0;
      for (int j = 0; j < K; ++j) {
        r.y[t * C + c] += w[c * K + j] * win[(t + j) * C + c];
        abs_sum += std::abs(w[c * K + j] * win[(t + j) * C + c]);
      }
      // K float products summed in order: |error| <= K u sum|w x| (+ O(u^2)).
      r.bound[t * C + c] = (K + 1) * u * abs_sum;
    }
  }
  r.state.assign(win.end() - (K - 1) * C, win.end());
  return r;
}

TEST(RecurrentOps, SsmConvMatchesFloat64InOneCallOrTokenByTokenAndInPlace) {
  std::mt19937 rng(5);
  const int K = 4;
  for (std::int64_t C : {1, 7, 300, 600}) {
    const std::int64_t T = 9;
    auto x = randn(rng, T * C), w = randn(rng, C * K, 0.5f), st0 = randn(rng, (K - 1) * C);
    const Conv64 ref = conv64(x, T, C, w, K, st0);
    for (int threads : {1, 2}) {
      CpuBackend be(threads);
      for (std::int64_t step : {T, std::int64_t{1}, std::int64_t{4}}) {  // calls of `step` tokens
        std::vector<float> st = st0, y(T * C);
        for (std::int64_t t = 0; t < T; t += step) {
          const std::int64_t n = std::min(step, T - t);
          be.ssm_conv(x.data() + t * C, n, C, w.data(), K, st.data(), y.data() + t * C);
        }
        for (std::int64_t i = 0; i < T * C; ++i) {
          ASSERT_NEAR(y[i], ref.y[i], ref.bound[i])
              << "C=" << C << " threads=" << threads << " step=" << step << " i=" << i;
        }
        for (std::size_t i = 0; i < st.size(); ++i) ASSERT_EQ(st[i], ref.state[i]);  // raw copies
        // In place (y = x): every input is read before its output is written,
        // so the same arithmetic and the same bits.
        std::vector<float> st_in_place = st0, xy = x;
        for (std::int64_t t = 0; t < T; t += step) {
          const std::int64_t n = std::min(step, T - t);
          be.ssm_conv(xy.data() + t * C, n, C, w.data(), K, st_in_place.data(), xy.data() + t * C);
        }
        EXPECT_EQ(xy, y) << "in place, C=" << C << " threads=" << threads << " step=" << step;
        EXPECT_EQ(st_in_place, st) << "in place, C=" << C;
      }
    }
    std::vector<float> st = st0, y(T * C);
    ops::ssm_conv_ref(x.data(), T, C, w.data(), K, st.data(), y.data());
    for (std::int64_t i = 0; i < T * C; ++i) ASSERT_NEAR(y[i], ref.y[i], ref.bound[i]);
  }
}

// The rule in float64, literally: S <- S e^g; S <- S + beta (v - S k) k^T; o = scale S q.
// Also returns, per output, a bound on a float kernel's error. With ||k|| = 1 and
// 0 < beta < 1 the update S (I - beta k k^T) is a contraction, so an error made at one
// step never grows later; each step adds at most ~(dk + 4) u M to a state row, M
// the largest row norm of S (or |v|) seen, and o adds (dk + 2) u ||S_i|| |q| scale.
// After t steps: |o error| <= (t + 1)(dk + 4) u M |q| scale.
struct Delta64 {
  std::vector<double> o, bound, state;
};
Delta64 delta64(const GatedDeltaArgs& a, const std::vector<float>& state0) {
  const std::int64_t dk = a.dk, dv = a.dv;
  Delta64 r;
  r.state.assign(state0.begin(), state0.end());
  r.o.assign(a.n_tokens * a.n_head_v * dv, 0.0);
  r.bound.assign(r.o.size(), 0.0);
  std::vector<double> M(a.n_head_v, 0.0);
  for (std::int64_t t = 0; t < a.n_tokens; ++t) {
    for (std::int32_t h = 0; h < a.n_head_v; ++h) {
      const std::int32_t kh =
          a.map == KHeadMap::Tiled ? h % a.n_head_k : h / (a.n_head_v / a.n_head_k);
      const float* q = a.q + (t * a.n_head_k + kh) * dk;
      const float* k = a.k + (t * a.n_head_k + kh) * dk;
      const float* v = a.v + (t * a.n_head_v + h) * dv;
      const double decay = std::exp(double(a.g[t * a.n_head_v + h]));
      const double beta = a.beta[t * a.n_head_v + h];
      double* S = r.state.data() + h * dv * dk;
      double qn = 0;
      for (std::int64_t j = 0; j < dk; ++j) qn += double(q[j]) * q[j];
      qn = std::sqrt(qn);
      for (std::int64_t i = 0; i < dv; ++i) {
        double* s = S + i * dk;
        for (std::int64_t j = 0; j < dk; ++j) s[j] *= decay;
        double sk = 0;
        for (std::int64_t j = 0; j < dk; ++j) sk += s[j] * k[j];
        const double d = beta * (v[i] - sk);
        double sq = 0, sn = 0;
        for (std::int64_t j = 0; j < dk; ++j) {
          s[j] += d * k[j];
          sq += s[j] * q[j];
          sn += s[j] * s[j];
        }
        M[h] = std::max({M[h], std::sqrt(sn), std::abs(double(v[i]))});
        const std::int64_t o = (t * a.n_head_v + h) * dv + i;
        r.o[o] = sq * a.scale;
        r.bound[o] = (t + 2) * (dk + 4) * u * M[h] * qn * a.scale + 1e-30;
      }
    }
  }
  return r;
}

struct DeltaCase {
  std::int32_t hk, hv, dk, dv;
  std::int64_t T;
  KHeadMap map;
};

// q, k unit rows (the model l2-normalizes them), g <= 0, 0 < beta < 1: the model's ranges.
struct DeltaInputs {
  std::vector<float> q, k, v, g, beta, state;
  GatedDeltaArgs args(const DeltaCase& c) const {
    GatedDeltaArgs a;
    a.q = q.data();
    a.k = k.data();
    a.v = v.data();
    a.g = g.data();
    a.beta = beta.data();
    a.n_tokens = c.T;
    a.n_head_k = c.hk;
    a.n_head_v = c.hv;
    a.dk = c.dk;
    a.dv = c.dv;
    a.scale = 1.0f / std::sqrt(static_cast<float>(c.dk));
    a.map = c.map;
    return a;
  }
};
DeltaInputs delta_inputs(const DeltaCase& c, std::mt19937& rng) {
  DeltaInputs in;
  in.q = randn(rng, c.T * c.hk * c.dk);
  in.k = randn(rng, c.T * c.hk * c.dk);
  for (auto* m : {&in.q, &in.k}) {
    for (std::int64_t r = 0; r < c.T * c.hk; ++r)
      ops::l2_norm_row(m->data() + r * c.dk, c.dk, 1e-6f, m->data() + r * c.dk);
  }
  in.v = randn(rng, c.T * c.hv * c.dv);
  std::uniform_real_distribution<float> gd(-2.0f, 0.0f), bd(0.01f, 0.99f);
  for (std::int64_t i = 0; i < c.T * c.hv; ++i) {
    in.g.push_back(gd(rng));
    in.beta.push_back(bd(rng));
  }
  in.state = randn(rng, std::size_t(c.hv) * c.dv * c.dk, 0.3f);
  return in;
}

class GatedDelta : public ::testing::TestWithParam<DeltaCase> {};

TEST_P(GatedDelta, EveryCpuLevelAndTheThreadedBackendMatchFloat64) {
  const DeltaCase c = GetParam();
  std::mt19937 rng(6);
  const DeltaInputs in = delta_inputs(c, rng);
  const Delta64 ref = delta64(in.args(c), in.state);
  const auto check = [&](const std::vector<float>& o, const std::vector<float>& st,
                         const std::string& what) {
    for (std::size_t i = 0; i < o.size(); ++i) {
      ASSERT_NEAR(o[i], ref.o[i], ref.bound[i]) << what << " out " << i;
    }
    // The final state's rows: the same contraction argument, bound of the last step.
    const double sb = (c.T + 2) * (c.dk + 4) * u * 8.0;
    for (std::size_t i = 0; i < st.size(); ++i) {
      ASSERT_NEAR(st[i], ref.state[i], sb * (1 + std::abs(ref.state[i]))) << what << " state " << i;
    }
  };
  {
    std::vector<float> st = in.state, o(ref.o.size());
    GatedDeltaArgs a = in.args(c);
    a.state = st.data();
    a.out = o.data();
    ops::gated_delta_rule_ref(a);
    check(o, st, "scalar reference");
  }
  for (CpuLevel level : {CpuLevel::Scalar, CpuLevel::Avx2, CpuLevel::Avx512}) {
    if (level > detected_cpu_level()) continue;
    std::vector<float> st = in.state, o(ref.o.size());
    GatedDeltaArgs a = in.args(c);
    a.state = st.data();
    a.out = o.data();
    ops::gated_delta_rule_heads(a, 0, c.hv, level);
    check(o, st, cpu_level_name(level));
    // q, k and v as slices of one [T][q | k | v | pad] buffer (row_stride),
    // the outputs written over v: the same arithmetic on the same values, so
    // the same bits.
    const std::int64_t qk = std::int64_t{c.hk} * c.dk, vw = std::int64_t{c.hv} * c.dv;
    const std::int64_t stride = 2 * qk + vw + 3;
    std::vector<float> rows(static_cast<std::size_t>(c.T * stride), -7.0f);
    for (std::int64_t t = 0; t < c.T; ++t) {
      std::copy(a.q + t * qk, a.q + (t + 1) * qk, rows.begin() + t * stride);
      std::copy(a.k + t * qk, a.k + (t + 1) * qk, rows.begin() + t * stride + qk);
      std::copy(a.v + t * vw, a.v + (t + 1) * vw, rows.begin() + t * stride + 2 * qk);
    }
    std::vector<float> st_strided = in.state;
    GatedDeltaArgs b = in.args(c);
    b.q = rows.data();
    b.k = rows.data() + qk;
    b.v = b.out = rows.data() + 2 * qk;
    b.row_stride = stride;
    b.state = st_strided.data();
    ops::gated_delta_rule_heads(b, 0, c.hv, level);
    for (std::int64_t t = 0; t < c.T; ++t) {
      const std::vector<float> got(rows.begin() + t * stride + 2 * qk,
                                   rows.begin() + t * stride + 2 * qk + vw);
      const std::vector<float> want(o.begin() + t * vw, o.begin() + (t + 1) * vw);
      EXPECT_EQ(got, want) << cpu_level_name(level) << " row_stride, token " << t;
    }
    EXPECT_EQ(st_strided, st) << cpu_level_name(level) << " row_stride";
  }
  // The backend (active level, SEAM_CPU), threaded over heads.
  {
    for (int threads : {1, 2}) {
      CpuBackend be(threads);
      // The whole run in one call, then token by token (the state carries over).
      std::vector<float> st = in.state, o(ref.o.size());
      GatedDeltaArgs a = in.args(c);
      a.state = st.data();
      a.out = o.data();
      be.gated_delta_rule(a);
      const std::string what = "backend threads " + std::to_string(threads);
      check(o, st, what);
      st = in.state;
      for (std::int64_t t = 0; t < c.T; ++t) {
        GatedDeltaArgs one = in.args(c);
        one.n_tokens = 1;
        one.q += t * c.hk * c.dk;
        one.k += t * c.hk * c.dk;
        one.v += t * c.hv * c.dv;
        one.g += t * c.hv;
        one.beta += t * c.hv;
        one.state = st.data();
        one.out = o.data() + t * c.hv * c.dv;
        be.gated_delta_rule(one);
      }
      check(o, st, what + " token by token");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, GatedDelta,
                         ::testing::Values(DeltaCase{1, 1, 16, 16, 12, KHeadMap::Tiled},
                                           DeltaCase{2, 4, 16, 8, 9, KHeadMap::Tiled},
                                           DeltaCase{2, 4, 16, 8, 9, KHeadMap::Grouped},
                                           DeltaCase{1, 3, 33, 17, 5, KHeadMap::Grouped},
                                           DeltaCase{2, 2, 128, 128, 6, KHeadMap::Tiled}),
                         [](const auto& info) {
                           const DeltaCase& c = info.param;
                           return "hk" + std::to_string(c.hk) + "_hv" + std::to_string(c.hv) +
                                  "_dk" + std::to_string(c.dk) + "_dv" + std::to_string(c.dv) +
                                  (c.map == KHeadMap::Tiled ? "_tiled" : "_grouped");
                         });

// The rule itself: with no decay and beta = 1 a unit key stores its value exactly
// (S k = v after the write), and the two head maps really read different k-heads.
TEST(RecurrentOps, DeltaRuleRecallsTheWrittenValueAndHeadMapsDiffer) {
  const DeltaCase c{2, 4, 8, 8, 1, KHeadMap::Tiled};
  std::mt19937 rng(7);
  DeltaInputs in = delta_inputs(c, rng);
  std::fill(in.g.begin(), in.g.end(), 0.0f);
  std::fill(in.beta.begin(), in.beta.end(), 1.0f);
  in.q = in.k;  // query with the key just written
  CpuBackend be(1);
  std::vector<float> o_tiled(c.hv * c.dv), o_grouped(c.hv * c.dv);
  for (auto [map, out] :
       {std::pair{KHeadMap::Tiled, &o_tiled}, std::pair{KHeadMap::Grouped, &o_grouped}}) {
    DeltaCase cm = c;
    cm.map = map;
    std::vector<float> st = in.state;
    GatedDeltaArgs a = in.args(cm);
    a.scale = 1.0f;
    a.state = st.data();
    a.out = out->data();
    be.gated_delta_rule(a);
    // o = S' k = S k + (v - S k) k.k = v, since ||k|| = 1.
    for (std::int64_t i = 0; i < c.hv * c.dv; ++i) EXPECT_NEAR((*out)[i], in.v[i], 1e-5) << i;
  }
  // Same outputs, but the states differ: head 1 wrote key 1 (tiled) or key 0 (grouped).
  std::vector<float> st_t = in.state, st_g = in.state, o(c.hv * c.dv);
  for (auto [map, st] : {std::pair{KHeadMap::Tiled, &st_t}, std::pair{KHeadMap::Grouped, &st_g}}) {
    DeltaCase cm = c;
    cm.map = map;
    GatedDeltaArgs a = in.args(cm);
    a.state = st->data();
    a.out = o.data();
    be.gated_delta_rule(a);
  }
  double diff = 0;
  for (std::size_t i = c.dv * c.dk; i < 2u * c.dv * c.dk; ++i) diff += std::abs(st_t[i] - st_g[i]);
  EXPECT_GT(diff, 0.1);
}

}  // namespace
}  // namespace seam
