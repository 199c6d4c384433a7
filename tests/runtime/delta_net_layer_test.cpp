// The gated-delta-net mixer (runtime/delta_net_layer.h) on a batch mixing two
// sequences over two decode calls, against a float64 implementation of the
// same math written out here step by step (tools/families.py's delta_net, the
// Qwen3.5 / Qwen3-Next block), for both k-head maps and the fused ssm_ba.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "runtime/delta_net_layer.h"

namespace seam {
namespace {

constexpr std::int64_t kEmbd = 16;
constexpr float kEps = 1e-6f;

struct Mat {
  std::int64_t rows = 0, cols = 0;
  std::vector<float> w;  // [rows][cols]
  WeightView view() const {
    WeightView v;
    v.type = TensorType::F32;
    v.n_in = cols;
    v.n_out = rows;
    v.data = reinterpret_cast<const std::byte*>(w.data());
    v.row_stride = static_cast<std::size_t>(cols) * sizeof(float);
    return v;
  }
  std::vector<double> apply(const std::vector<double>& x) const {
    std::vector<double> y(rows, 0.0);
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) y[r] += w[r * cols + c] * x[c];
    return y;
  }
};

std::vector<float> randn(std::mt19937& rng, std::size_t n, float scale) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

Mat mat(std::mt19937& rng, std::int64_t rows, std::int64_t cols, float scale) {
  return {rows, cols, randn(rng, static_cast<std::size_t>(rows * cols), scale)};
}

double silu(double x) { return x / (1.0 + std::exp(-x)); }

struct Layer {
  DeltaNetParams p;
  Mat qkv, gate, beta, alpha, ba, out;
  std::vector<float> conv, dt_bias, a, norm;

  Layer(DeltaNetParams params, std::mt19937& rng) : p(params) {
    const std::int64_t C = p.conv_channels(), V = p.v_width(), Hv = p.n_head_v;
    qkv = mat(rng, C, kEmbd, 0.4f);
    gate = mat(rng, V, kEmbd, 0.4f);
    beta = mat(rng, Hv, kEmbd, 0.6f);
    alpha = mat(rng, Hv, kEmbd, 0.6f);
    ba = mat(rng, 2 * Hv, kEmbd, 0.6f);
    out = mat(rng, kEmbd, V, 0.3f);
    conv = randn(rng, static_cast<std::size_t>(C * p.d_conv), 0.5f);
    dt_bias = randn(rng, static_cast<std::size_t>(Hv), 0.5f);
    for (float x : randn(rng, static_cast<std::size_t>(Hv), 0.5f)) a.push_back(-std::exp(x));
    for (float x : randn(rng, p.d_state, 0.2f)) norm.push_back(1.0f + x);
  }
  DeltaNetWeights weights() const {
    DeltaNetWeights w;
    w.qkv = qkv.view();
    w.gate = gate.view();
    w.beta = beta.view();
    w.alpha = alpha.view();
    w.ba = ba.view();
    w.conv1d = conv.data();
    w.dt_bias = dt_bias.data();
    w.a = a.data();
    w.norm = norm.data();
    w.out = out.view();
    return w;
  }
};

// One sequence's state in float64 and the layer applied to its next token.
struct Ref {
  const Layer& L;
  std::vector<std::vector<double>> win;  // the last d_conv - 1 raw inputs
  std::vector<double> S;                 // [Hv][S][S]

  explicit Ref(const Layer& layer)
      : L(layer),
        win(layer.p.d_conv - 1, std::vector<double>(layer.p.conv_channels(), 0.0)),
        S(layer.p.state_floats(), 0.0) {}

  std::vector<double> step(const std::vector<float>& hf) {
    const DeltaNetParams& p = L.p;
    const std::int64_t C = p.conv_channels(), Hk = p.n_head_k, Hv = p.n_head_v, D = p.d_state;
    const std::int64_t r = Hv / Hk;
    const std::vector<double> h(hf.begin(), hf.end());
    const std::vector<double> m = L.qkv.apply(h), z = L.gate.apply(h);
    std::vector<double> b(Hv), al(Hv);
    if (p.ba_fused) {
      const std::vector<double> ba = L.ba.apply(h);
      for (std::int64_t j = 0; j < Hk; ++j) {
        for (std::int64_t i = 0; i < r; ++i) {
          b[j * r + i] = ba[j * 2 * r + i];
          al[j * r + i] = ba[j * 2 * r + r + i];
        }
      }
    } else {
      b = L.beta.apply(h);
      al = L.alpha.apply(h);
    }
    std::vector<double> u(C);
    for (std::int64_t c = 0; c < C; ++c) {
      double acc = 0;
      for (std::uint32_t j = 0; j + 1 < p.d_conv; ++j) acc += L.conv[c * p.d_conv + j] * win[j][c];
      acc += L.conv[c * p.d_conv + p.d_conv - 1] * m[c];
      u[c] = silu(acc);
    }
    win.erase(win.begin());
    win.push_back(m);
    const auto l2 = [&](std::int64_t off) {
      double ss = 0;
      for (std::int64_t i = 0; i < D; ++i) ss += u[off + i] * u[off + i];
      const double inv = 1.0 / std::max(std::sqrt(ss), double(kEps));
      std::vector<double> x(D);
      for (std::int64_t i = 0; i < D; ++i) x[i] = u[off + i] * inv;
      return x;
    };
    std::vector<double> y(Hv * D);
    for (std::int64_t hv = 0; hv < Hv; ++hv) {
      const std::int64_t kh = p.k_head_map == KHeadMap::Tiled ? hv % Hk : hv / r;
      std::vector<double> q = l2(kh * D), k = l2(Hk * D + kh * D);
      for (auto& x : q) x /= std::sqrt(double(D));
      const double beta = 1.0 / (1.0 + std::exp(-b[hv]));
      const double sp_in = al[hv] + L.dt_bias[hv];
      const double g = L.a[hv] * (sp_in > 20 ? sp_in : std::log1p(std::exp(sp_in)));
      double* St = S.data() + hv * D * D;
      for (std::int64_t i = 0; i < D * D; ++i) St[i] *= std::exp(g);
      std::vector<double> o(D);
      for (std::int64_t i = 0; i < D; ++i) {
        double sk = 0;
        for (std::int64_t j = 0; j < D; ++j) sk += St[i * D + j] * k[j];
        const double d = beta * (u[2 * Hk * D + hv * D + i] - sk);
        for (std::int64_t j = 0; j < D; ++j) St[i * D + j] += d * k[j];
        for (std::int64_t j = 0; j < D; ++j) o[i] += St[i * D + j] * q[j];
      }
      double ss = 0;
      for (double x : o) ss += x * x;
      const double sc = 1.0 / std::sqrt(ss / D + kEps);
      for (std::int64_t i = 0; i < D; ++i)
        y[hv * D + i] = o[i] * sc * L.norm[i] * silu(z[hv * D + i]);
    }
    return L.out.apply(y);
  }
};

struct LayerCase {
  std::uint32_t hk, hv, d_state;
  KHeadMap map;
  bool ba_fused;
};

class DeltaNetLayer : public ::testing::TestWithParam<LayerCase> {};

TEST_P(DeltaNetLayer, MixedBatchesMatchFloat64PerSequence) {
  const LayerCase c = GetParam();
  DeltaNetParams p;
  p.d_conv = 4;
  p.d_state = c.d_state;
  p.n_head_k = c.hk;
  p.n_head_v = c.hv;
  p.k_head_map = c.map;
  p.ba_fused = c.ba_fused;
  std::mt19937 rng(21);
  const Layer L(p, rng);
  const DeltaNetWeights w = L.weights();

  // Two decode calls: seq 0 gets 5 then 3 tokens, seq 1 gets 2 then 4,
  // interleaved in each batch; the inputs are random normed-looking rows.
  const std::vector<std::vector<std::uint32_t>> calls = {{0, 1, 0, 0, 1, 0, 0},
                                                         {1, 0, 1, 1, 0, 1, 0}};
  RecurrentStore store(2, {1, p.conv_floats(), p.state_floats()});
  DeltaNetScratch scratch(p, 8);
  CpuBackend be(2);
  Ref ref[2] = {Ref(L), Ref(L)};
  std::int32_t next[2] = {0, 0};
  for (std::size_t call = 0; call < calls.size(); ++call) {
    std::vector<Decode> batch;
    for (std::uint32_t seq : calls[call]) batch.push_back({1, next[seq]++, seq, true});
    const auto T = static_cast<std::int64_t>(batch.size());
    const std::vector<float> h = randn(rng, static_cast<std::size_t>(T * kEmbd), 1.0f);
    std::vector<float> out(static_cast<std::size_t>(T * kEmbd));
    const std::vector<SeqRun> runs = seq_runs(batch);
    store.begin_batch(runs);
    delta_net_layer(p, w, kEps, be, store, 0, runs, h.data(), T, scratch, out.data());
    store.commit_batch(runs);
    for (std::int64_t t = 0; t < T; ++t) {
      const std::vector<float> ht(h.begin() + t * kEmbd, h.begin() + (t + 1) * kEmbd);
      const std::vector<double> want = ref[batch[t].seq].step(ht);
      double mx = 0, err = 0;
      for (std::int64_t i = 0; i < kEmbd; ++i) {
        mx = std::max(mx, std::abs(want[i]));
        err = std::max(err, std::abs(out[t * kEmbd + i] - want[i]));
      }
      // The suite's F32 tolerance (1e-4 of the row's scale): float32 steps of
      // length <= 64 each add a few hundred u = 2^-24 at most.
      EXPECT_LT(err, 1e-4 * mx) << "call " << call << " row " << t << " seq " << batch[t].seq;
    }
  }
  EXPECT_EQ(store.seq_pos(0), 8);
  EXPECT_EQ(store.seq_pos(1), 6);
}

INSTANTIATE_TEST_SUITE_P(Shapes, DeltaNetLayer,
                         ::testing::Values(LayerCase{2, 2, 8, KHeadMap::Tiled, false},
                                           LayerCase{2, 4, 8, KHeadMap::Tiled, false},
                                           LayerCase{2, 4, 8, KHeadMap::Grouped, true},
                                           LayerCase{1, 3, 16, KHeadMap::Grouped, false}),
                         [](const auto& info) {
                           const LayerCase& c = info.param;
                           return "hk" + std::to_string(c.hk) + "_hv" + std::to_string(c.hv) +
                                  (c.map == KHeadMap::Tiled ? "_tiled" : "_grouped") +
                                  (c.ba_fused ? "_ba" : "");
                         });

}  // namespace
}  // namespace seam
