// CpuBackend's non-matmul ops against straightforward double-precision references.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "compute/backend.h"
#include "compute/ops.h"

namespace seam {
namespace {

std::vector<float> randn(std::mt19937& rng, std::size_t n, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(Ops, DotF32SimdMatchesScalarOnOddLengths) {
  std::mt19937 rng(1);
  for (std::int64_t n : {1, 7, 8, 15, 16, 17, 33, 64, 100, 1023}) {
    auto a = randn(rng, n), b = randn(rng, n);
    double exact = 0;
    for (std::int64_t i = 0; i < n; ++i) exact += static_cast<double>(a[i]) * b[i];
    EXPECT_NEAR(ops::dot_f32(a.data(), b.data(), n), exact, 1e-5 * (1 + std::sqrt(n)));
    EXPECT_NEAR(ops::dot_f32_ref(a.data(), b.data(), n), exact, 1e-5 * (1 + std::sqrt(n)));
  }
}

TEST(Ops, RmsNorm) {
  std::mt19937 rng(2);
  auto x = randn(rng, 37), w = randn(rng, 37);
  std::vector<float> y(37);
  ops::rms_norm_row(x.data(), w.data(), 37, 1e-5f, y.data());
  double ss = 0;
  for (float v : x) ss += static_cast<double>(v) * v;
  const double scale = 1.0 / std::sqrt(ss / 37 + 1e-5);
  for (int i = 0; i < 37; ++i) EXPECT_NEAR(y[i], x[i] * scale * w[i], 1e-5);
}

// The rotation (a, b) = (x c - y s, x s + y c) in float rounds each product and the sum, or
// fewer times where the compiler fuses a multiply-add: against the exact value (double holds
// every float product exactly) each component is off by at most (2u + u^2)(|x c| + |y s|),
// u = 2^-24; 3u bounds it either way.
void expect_rotated(float a, float b, float x, float y, float c, float s) {
  const double xc = double(x) * c, ys = double(y) * s, xs = double(x) * s, yc = double(y) * c;
  const double u = std::ldexp(1.0, -24);
  EXPECT_NEAR(a, xc - ys, 3 * u * (std::abs(xc) + std::abs(ys)));
  EXPECT_NEAR(b, xs + yc, 3 * u * (std::abs(xs) + std::abs(yc)));
}

TEST(Ops, RopeAdjacentAndNeoxRotateTheRightPairs) {
  RopeParams p;
  p.n_rot = 6;
  p.freq_base = 100.0f;
  std::vector<float> cs(6);
  ops::rope_angles(3, p, cs.data());
  for (int i = 0; i < 3; ++i) {
    const double theta = 3 * std::pow(100.0, -2.0 * i / 6);
    EXPECT_NEAR(cs[2 * i], std::cos(theta), 1e-6);
    EXPECT_NEAR(cs[2 * i + 1], std::sin(theta), 1e-6);
  }
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};  // head_dim 8, last 2 dims pass through
  auto adj = x;
  ops::rope_head(adj.data(), p, cs.data());
  for (int i = 0; i < 3; ++i) {
    const float c = cs[2 * i], s = cs[2 * i + 1];
    expect_rotated(adj[2 * i], adj[2 * i + 1], x[2 * i], x[2 * i + 1], c, s);
  }
  EXPECT_EQ(adj[6], 7);
  EXPECT_EQ(adj[7], 8);
  p.neox = true;
  auto nx = x;
  ops::rope_head(nx.data(), p, cs.data());
  for (int i = 0; i < 3; ++i) {
    const float c = cs[2 * i], s = cs[2 * i + 1];
    expect_rotated(nx[i], nx[i + 3], x[i], x[i + 3], c, s);
  }
  // Llama 3 frequency factors divide each angle.
  std::vector<float> factors = {1.0f, 2.0f, 4.0f};
  p.freq_factors = factors.data();
  ops::rope_angles(3, p, cs.data());
  EXPECT_NEAR(cs[5], std::sin(3 * std::pow(100.0, -4.0 / 6) / 4), 1e-6);
}

// CpuBackend::rope keeps the last few angle tables: interleaved calls with
// other positions and other parameters (local and global layers) must each
// rotate exactly as angles computed afresh for that call.
TEST(Ops, RopeAngleTablesAreReusedOnlyForTheSameCall) {
  CpuBackend be(1);
  RopeParams a;
  a.n_rot = 8;
  RopeParams b = a;
  b.freq_base = 1e6f;
  RopeParams c = a;
  c.neox = true;
  const std::vector<std::int32_t> p1 = {0, 1, 2, 3}, p2 = {4, 5, 6, 7}, p3 = {0, 1, 2};
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int n_heads = 2, head_dim = 10;
  struct Call {
    const RopeParams* p;
    const std::vector<std::int32_t>* pos;
  };
  const Call calls[] = {{&a, &p1}, {&a, &p1}, {&b, &p1}, {&a, &p2}, {&a, &p1}, {&c, &p1},
                        {&b, &p2}, {&a, &p3}, {&b, &p1}, {&a, &p1}, {&c, &p3}, {&a, &p2}};
  for (const Call& call : calls) {
    const auto n = static_cast<std::int64_t>(call.pos->size());
    std::vector<float> x(static_cast<std::size_t>(n * n_heads * head_dim));
    for (float& v : x) v = normal(rng);
    std::vector<float> want = x;
    std::vector<float> cs(8);
    for (std::int64_t t = 0; t < n; ++t) {
      ops::rope_angles((*call.pos)[static_cast<std::size_t>(t)], *call.p, cs.data());
      for (int h = 0; h < n_heads; ++h)
        ops::rope_head(want.data() + (t * n_heads + h) * head_dim, *call.p, cs.data());
    }
    be.rope(x.data(), n, n_heads, head_dim, *call.pos, *call.p);
    // The same float operations on the same angles: identical results.
    EXPECT_EQ(x, want);
  }
}

// A prefill's row-wise and element-wise ops are split over the pool (large
// calls only). Each row or element is still computed by the same function
// on the same inputs, so the results must be identical whatever the thread
// count: a wrong offset or a missed piece in a split shows here. The sizes
// cross the split threshold (2^15 floats a piece) with odd tails.
TEST(Ops, RowOpsGiveTheSameBitsOnAnyThreadCount) {
  std::mt19937 rng(7);
  const std::int64_t T = 300, n = 576;  // 172,800 floats: several pieces
  const std::int64_t flat = 5 * 32768 + 37;
  const auto x = randn(rng, static_cast<std::size_t>(T * n));
  const auto w = randn(rng, static_cast<std::size_t>(n));
  const auto z = randn(rng, static_cast<std::size_t>(T * n));
  const auto a = randn(rng, static_cast<std::size_t>(flat)),
             b = randn(rng, static_cast<std::size_t>(flat));
  std::vector<std::int32_t> pos(static_cast<std::size_t>(T));
  for (std::int64_t t = 0; t < T; ++t)
    pos[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(3 * t + 1);
  RopeParams rp;
  rp.n_rot = 64;
  std::vector<std::uint32_t> cells(static_cast<std::size_t>(T));
  for (std::int64_t t = 0; t < T; ++t)
    cells[static_cast<std::size_t>(t)] = static_cast<std::uint32_t>((7 * t) % T);

  struct Outputs {
    std::vector<float> norm, gated_norm, l2, roped, sum, prod, silu, gelu, biased;
    std::vector<std::byte> k16, v16, k8, v8;
  };
  const auto run = [&](int threads) {
    CpuBackend be(threads);
    Outputs o;
    o.norm.resize(x.size());
    be.rms_norm(x.data(), w.data(), T, n, 1e-5f, o.norm.data());
    o.gated_norm.resize(x.size());
    be.rms_norm_gated(x.data(), w.data(), z.data(), T, n, 1e-6f, o.gated_norm.data());
    o.l2.resize(x.size());
    be.l2_norm(x.data(), T, n, 1e-6f, o.l2.data());
    o.roped = x;
    be.rope(o.roped.data(), T, 9, 64, pos, rp);
    o.sum = a;
    be.add(o.sum.data(), b.data(), flat);
    o.prod = a;
    be.mul(o.prod.data(), b.data(), flat);
    o.silu.resize(a.size());
    be.gated_activation(a.data(), b.data(), flat, Activation::Silu, o.silu.data());
    o.gelu.resize(a.size());
    be.gated_activation(a.data(), b.data(), flat, Activation::GeluTanh, o.gelu.data());
    o.biased = x;
    be.add_bias(o.biased.data(), w.data(), T, n);
    for (KvType type : {KvType::F16, KvType::Q8_0}) {
      const std::size_t bytes = kv_row_bytes(type, n) * static_cast<std::size_t>(T);
      std::vector<std::byte> k(bytes), v(bytes);
      be.store_kv(k.data(), v.data(), type, n, cells, x.data(), z.data());
      (type == KvType::F16 ? o.k16 : o.k8) = std::move(k);
      (type == KvType::F16 ? o.v16 : o.v8) = std::move(v);
    }
    return o;
  };
  const Outputs one = run(1);
  for (int threads : {2, 3, 4}) {
    const Outputs many = run(threads);
    EXPECT_EQ(many.norm, one.norm) << threads;
    EXPECT_EQ(many.gated_norm, one.gated_norm) << threads;
    EXPECT_EQ(many.l2, one.l2) << threads;
    EXPECT_EQ(many.roped, one.roped) << threads;
    EXPECT_EQ(many.sum, one.sum) << threads;
    EXPECT_EQ(many.prod, one.prod) << threads;
    EXPECT_EQ(many.silu, one.silu) << threads;
    EXPECT_EQ(many.gelu, one.gelu) << threads;
    EXPECT_EQ(many.biased, one.biased) << threads;
    EXPECT_EQ(many.k16, one.k16) << threads;
    EXPECT_EQ(many.v16, one.v16) << threads;
    EXPECT_EQ(many.k8, one.k8) << threads;
    EXPECT_EQ(many.v8, one.v8) << threads;
  }
  // And against the unsplit functions themselves.
  std::vector<float> want(static_cast<std::size_t>(n));
  ops::rms_norm_row(x.data() + 123 * n, w.data(), n, 1e-5f, want.data());
  EXPECT_TRUE(std::equal(want.begin(), want.end(), one.norm.begin() + 123 * n));
  std::vector<float> silu(a.size());
  ops::gated_activation(a.data(), b.data(), flat, Activation::Silu, silu.data());
  EXPECT_EQ(silu, one.silu);
}

// Masked GQA attention against a double-precision reference, multithreaded.
TEST(Ops, AttentionMatchesReferenceWithMaskAndGqa) {
  std::mt19937 rng(3);
  const int n_head = 6, n_kv = 2, hd = 12, n_cells = 10, T = 4;
  auto q = randn(rng, T * n_head * hd);
  auto k = randn(rng, n_cells * n_kv * hd);
  auto v = randn(rng, n_cells * n_kv * hd);
  // Row t sees an arbitrary subset of cells, in the given order.
  std::vector<std::vector<std::uint32_t>> vis = {{3}, {0, 5, 9}, {}, {1, 2, 3, 4, 6, 7, 8}};
  std::vector<std::uint32_t> offsets = {0}, cells;
  for (auto& r : vis) {
    cells.insert(cells.end(), r.begin(), r.end());
    offsets.push_back(static_cast<std::uint32_t>(cells.size()));
  }
  for (float softcap : {0.0f, 5.0f}) {
    std::vector<float> out(T * n_head * hd, -1.0f);
    AttentionArgs a;
    a.q = q.data();
    a.k = k.data();
    a.v = v.data();
    a.out = out.data();
    a.n_tokens = T;
    a.n_head = n_head;
    a.n_head_kv = n_kv;
    a.head_dim = hd;
    a.scale = 0.3f;
    a.softcap = softcap;
    // Each row's own list: row t's is offsets[t] .. offsets[t + 1].
    const std::span<const std::uint32_t> off(offsets);
    a.mask = {off.first(static_cast<std::size_t>(T)), off.subspan(1), cells};
    CpuBackend be(3);
    be.attention(a);
    for (int t = 0; t < T; ++t) {
      for (int h = 0; h < n_head; ++h) {
        const int kvh = h / (n_head / n_kv);
        std::vector<double> w;
        double mx = -1e300, sum = 0;
        for (auto c : vis[t]) {
          double s = 0;
          for (int d = 0; d < hd; ++d)
            s += static_cast<double>(q[(t * n_head + h) * hd + d]) * k[(c * n_kv + kvh) * hd + d];
          s *= 0.3;
          if (softcap > 0) s = softcap * std::tanh(s / softcap);
          w.push_back(s);
          mx = std::max(mx, s);
        }
        for (auto& s : w) sum += (s = std::exp(s - mx));
        for (int d = 0; d < hd; ++d) {
          double o = 0;
          for (std::size_t j = 0; j < w.size(); ++j)
            o += w[j] / sum * v[(vis[t][j] * n_kv + kvh) * hd + d];
          EXPECT_NEAR(out[(t * n_head + h) * hd + d], o, 1e-5) << t << " " << h << " " << d;
        }
      }
    }
  }
}

TEST(Ops, GatedActivations) {
  std::vector<float> g = {-3, -0.5f, 0, 0.7f, 4}, u = {1, 2, 3, -1, 0.5f}, out(5);
  ops::gated_activation(g.data(), u.data(), 5, Activation::Silu, out.data());
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(out[i], g[i] / (1 + std::exp(-g[i])) * u[i], 1e-6);
  ops::gated_activation(g.data(), u.data(), 5, Activation::GeluTanh, out.data());
  for (int i = 0; i < 5; ++i) {
    const double x = g[i];
    const double ref =
        0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))) * u[i];
    EXPECT_NEAR(out[i], ref, 1e-6);
  }
  // gpt-oss: gate clamped above at 7 (not below), up to [-7, 7], then (up + 1).
  std::vector<float> g2 = {-10, 0, 5, 10, 3}, u2 = {-9, 3, 8, -1, -20}, o2(5);
  ops::gated_activation(g2.data(), u2.data(), 5, Activation::SwigluOai, o2.data());
  const double want[5] = {-10 / (1 + std::exp(17.02)) * -6, 0.0, 5 / (1 + std::exp(-8.51)) * 8,
                          7 / (1 + std::exp(-11.914)) * 0, 3 / (1 + std::exp(-5.106)) * -6};
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(o2[i], want[i], 1e-5 * (1 + std::abs(want[i]))) << i;
}

TEST(Ops, SoftmaxIsStableForLargeLogits) {
  std::vector<float> x = {1000, 1001, 999, -1e30f};
  ops::softmax_row(x.data(), 4);
  const double e0 = std::exp(-1.0), e2 = std::exp(-2.0), z = e0 + 1 + e2;
  EXPECT_NEAR(x[0], e0 / z, 1e-6);
  EXPECT_NEAR(x[1], 1 / z, 1e-6);
  EXPECT_NEAR(x[2], e2 / z, 1e-6);
  EXPECT_EQ(x[3], 0.0f);
}

// copy_rows moves whole rows between strided layouts and touches nothing else,
// in place too when it compacts rows toward the front.
TEST(Ops, CopyRowsHonoursBothStrides) {
  CpuBackend be(1);
  std::vector<float> src(5 * 7), dst(5 * 4, -1.0f);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i);
  be.copy_rows(src.data() + 2, 7, 5, 3, dst.data() + 1, 4);  // columns 2..4 -> 1..3
  for (int r = 0; r < 5; ++r) {
    EXPECT_EQ(dst[r * 4], -1.0f) << r;
    for (int c = 0; c < 3; ++c) EXPECT_EQ(dst[r * 4 + 1 + c], src[r * 7 + 2 + c]) << r << "," << c;
  }
  // In place: the first 3 of every 5 floats compacted to the front (the
  // gated queries of [q | gate] heads), rows overlapping their sources.
  std::vector<float> heads(6 * 5);
  for (std::size_t i = 0; i < heads.size(); ++i) heads[i] = static_cast<float>(i);
  const std::vector<float> before = heads;
  be.copy_rows(heads.data(), 5, 6, 3, heads.data(), 3);
  for (int r = 0; r < 6; ++r)
    for (int c = 0; c < 3; ++c) EXPECT_EQ(heads[r * 3 + c], before[r * 5 + c]) << r << "," << c;
  for (std::size_t i = 18; i < heads.size(); ++i) EXPECT_EQ(heads[i], before[i]) << i;
}

// scale_rows multiplies each row by its own factor: the same float product as
// scale on that row alone.
TEST(Ops, ScaleRowsUsesEachRowsFactor) {
  CpuBackend be(1);
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, want = x;
  const float s[] = {0.5f, -3.0f};
  be.scale_rows(x.data(), 2, 3, s);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(x[i], want[i] * s[i / 3]) << i;
}

// mul_rows multiplies every row by the same per-column factors.
TEST(Ops, MulRowsUsesEachColumnsFactor) {
  CpuBackend be(1);
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, want = x;
  const float v[] = {0.5f, -3.0f, 7.0f};
  be.mul_rows(x.data(), 2, 3, v);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(x[i], want[i] * v[i % 3]) << i;
}

}  // namespace
}  // namespace seam
