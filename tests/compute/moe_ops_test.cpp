// The backend's mixture-of-experts ops (route, experts_ffn) and host ops
// (add_bias, scale, softcap, store_kv) against plain scalar references.
// experts_ffn runs on the active CPU level (SEAM_CPU); its float32 results are
// compared with float64 ones within a bound carried through each of its steps.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "compute/backend.h"
#include "core/half.h"
#include "seam/error.h"

namespace seam {
namespace {

std::vector<float> random_vec(std::size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

TEST(Route, SoftmaxTopKRenormalisedAndSoftmaxOverSelected) {
  CpuBackend be(1);
  const std::int32_t n_exp = 6, k = 3;
  // Row 1 has a tie (ids 1 and 4): the lower id comes first.
  const std::vector<float> logits = {0.1f, 2.0f, -1.0f, 1.5f, 0.3f, 0.0f,
                                     0.5f, 3.0f, 0.2f,  -2.f, 3.0f, 1.0f};
  for (Routing mode : {Routing::Softmax, Routing::SoftmaxSelected}) {
    std::vector<std::int32_t> ids(2 * k);
    std::vector<float> w(2 * k);
    be.route(logits.data(), 2, n_exp, k, mode, ids.data(), w.data());
    for (int t = 0; t < 2; ++t) {
      // Reference: stable sort by descending logit (softmax is monotone).
      std::vector<int> order(n_exp);
      std::iota(order.begin(), order.end(), 0);
      const float* row = logits.data() + t * n_exp;
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return row[a] > row[b]; });
      double sum = 0;
      for (int j = 0; j < k; ++j) sum += std::exp(static_cast<double>(row[order[j]]));
      for (int j = 0; j < k; ++j) {
        EXPECT_EQ(ids[t * k + j], order[j]) << t << " " << j;
        // Both modes give exp(l_j) / sum over the selected of exp(l): the
        // softmax's full denominator cancels in the renormalisation.
        const double want = std::exp(static_cast<double>(row[order[j]])) / sum;
        EXPECT_NEAR(w[t * k + j], want, 1e-6) << t << " " << j;
      }
    }
  }
}

WeightView f32_view(const std::vector<float>& data, std::int64_t n_in, std::int64_t n_out) {
  WeightView v;
  v.type = TensorType::F32;
  v.n_in = n_in;
  v.n_out = n_out;
  v.data = reinterpret_cast<const std::byte*>(data.data());
  v.row_stride = static_cast<std::size_t>(n_in) * sizeof(float);
  return v;
}

// n_exp F32 experts of [n_out][n_in] each, one after another in w.
ExpertsView f32_experts(const std::vector<float>& w, std::int64_t n_in, std::int64_t n_out,
                        std::int32_t n_exp) {
  ExpertsView ev;
  ev.w = f32_view(w, n_in, n_out);
  ev.n_expert = n_exp;
  ev.expert_stride = static_cast<std::size_t>(n_out * n_in) * sizeof(float);
  return ev;
}

// Random experts for experts_ffn: gate and up [n_ff][n], down [n][n_ff], all
// F32, with biases when `biases` (gpt-oss) — the tensors and the view on them.
struct Experts {
  std::vector<float> gate, up, down, gate_b, up_b, down_b;
  ExpertsFfn f;
  Experts(std::int64_t n, std::int64_t n_ff, std::int32_t n_exp, Activation act, bool biases,
          unsigned seed)
      : gate(random_vec(static_cast<std::size_t>(n_exp * n_ff * n), seed, 0.3f)),
        up(random_vec(gate.size(), seed + 1, 0.3f)),
        down(random_vec(gate.size(), seed + 2, 0.3f)) {
    f.gate = f32_experts(gate, n, n_ff, n_exp);
    f.up = f32_experts(up, n, n_ff, n_exp);
    f.down = f32_experts(down, n_ff, n, n_exp);
    f.act = act;
    if (biases) {
      gate_b = random_vec(static_cast<std::size_t>(n_exp * n_ff), seed + 3);
      up_b = random_vec(gate_b.size(), seed + 4);
      down_b = random_vec(static_cast<std::size_t>(n_exp * n), seed + 5);
      f.gate_b = gate_b.data();
      f.up_b = up_b.data();
      f.down_b = down_b.data();
    }
  }
};

// ids [T][k]: k distinct experts per token out of n_exp, shuffled.
std::vector<std::int32_t> random_ids(std::int64_t T, std::int32_t k, std::int32_t n_exp,
                                     unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::int32_t> ids(T * k), e(n_exp);
  for (std::int64_t t = 0; t < T; ++t) {
    std::iota(e.begin(), e.end(), 0);
    std::shuffle(e.begin(), e.end(), rng);
    std::copy(e.begin(), e.begin() + k, ids.begin() + t * k);
  }
  return ids;
}

double activation(Activation act, double g, double u) {
  switch (act) {
    case Activation::Silu:
      return g / (1.0 + std::exp(-g)) * u;
    case Activation::SwigluOai: {
      const double gc = std::min(g, 7.0), uc = std::clamp(u, -7.0, 7.0);
      return gc / (1.0 + std::exp(-1.702 * gc)) * (uc + 1.0);
    }
    case Activation::GeluTanh:
      return 0.5 * g * (1.0 + std::tanh(0.7978845608028654 * (g + 0.044715 * g * g * g))) * u;
  }
  return 0.0;
}

// y[t] = sum_j w (down_e act(gate_e x + gate_b, up_e x + up_b) + down_b), in
// float64, against experts_ffn's float32 within a bound carried through each
// step. A length-m float32 dot product with a bias is within
// e(m) = m 2^-22 sum|w x| + 2^-23 |result| of the exact value (a few times the
// worst case). act(g, u) = phi(g) u' (u' = u, or clamp(u) + 1 for SwigluOai,
// |u'| <= |u| + 1), |phi'| <= 1.13 and |phi(g)| = |d act / du|, so it moves by
// at most 1.13 dg (|u'| + du) + |phi(g)| du, plus its own rounding: a few ulp
// of its exp and four roundings, 2^-20 |act|, and 2^-22 |g u'| where GELU's
// 1 + tanh cancels. down carries that as sum |W_d| da on top of its own e(n_ff).
TEST(ExpertsFfn, MatchesFloat64ReferenceForEachActivationWithAndWithoutBiases) {
  const std::int64_t n = 67, n_ff = 29, T = 7;
  const std::int32_t n_exp = 5, k = 2;
  // Expert 4 is never chosen; expert 0 by every token (a full-batch group).
  std::vector<std::int32_t> ids(T * k);
  for (std::int64_t t = 0; t < T; ++t) {
    ids[t * k] = 0;
    ids[t * k + 1] = 1 + static_cast<std::int32_t>(t % 3);
  }
  const std::vector<float> wts = random_vec(T * k, 2);
  const std::vector<float> x = random_vec(static_cast<std::size_t>(T * n), 3);
  for (Activation act : {Activation::Silu, Activation::SwigluOai, Activation::GeluTanh}) {
    for (bool biases : {false, true}) {
      const Experts ex(n, n_ff, n_exp, act, biases, 10);
      CpuBackend be(2);
      std::vector<float> y(T * n, 123.0f);
      be.experts_ffn(ex.f, x.data(), T, ids.data(), k, wts.data(), y.data());
      double worst = 0;
      for (std::int64_t t = 0; t < T; ++t) {
        const float* xr = x.data() + t * n;
        std::vector<double> want(n, 0.0), bound(n, 0.0);
        for (std::int32_t j = 0; j < k; ++j) {
          const std::int32_t e = ids[t * k + j];
          std::vector<double> a(n_ff), da(n_ff);
          for (std::int64_t i = 0; i < n_ff; ++i) {
            double g = biases ? ex.gate_b[e * n_ff + i] : 0.0,
                   u = biases ? ex.up_b[e * n_ff + i] : 0.0;
            double mg = 0, mu = 0;
            for (std::int64_t c = 0; c < n; ++c) {
              const double wg = ex.gate[(e * n_ff + i) * n + c], wu = ex.up[(e * n_ff + i) * n + c];
              g += wg * xr[c];
              u += wu * xr[c];
              mg += std::abs(wg * xr[c]);
              mu += std::abs(wu * xr[c]);
            }
            const double dg = n * std::ldexp(mg, -22) + std::ldexp(std::abs(g), -23);
            const double du = n * std::ldexp(mu, -22) + std::ldexp(std::abs(u), -23);
            a[i] = activation(act, g, u);
            const bool oai = act == Activation::SwigluOai;
            const double u_factor = std::abs(u) + (oai ? 1.0 : 0.0);
            const double phi = std::abs(activation(act, g, oai ? 0.0 : 1.0));  // |d act / du|
            da[i] = 1.13 * dg * (u_factor + du) + phi * du + std::ldexp(std::abs(a[i]), -20) +
                    std::ldexp(std::abs(g) * u_factor, -22);
          }
          for (std::int64_t o = 0; o < n; ++o) {
            double d = biases ? ex.down_b[e * n + o] : 0.0, md = 0, carried = 0;
            for (std::int64_t i = 0; i < n_ff; ++i) {
              const double w = ex.down[(e * n + o) * n_ff + i];
              d += w * a[i];
              md += std::abs(w) * (std::abs(a[i]) + da[i]);
              carried += std::abs(w) * da[i];
            }
            const double dd = carried + n_ff * std::ldexp(md, -22) + std::ldexp(std::abs(d), -23);
            want[o] += wts[t * k + j] * d;
            bound[o] += std::abs(wts[t * k + j]) * (dd + std::ldexp(std::abs(d) + dd, -23));
          }
        }
        for (std::int64_t o = 0; o < n; ++o) {
          const double b = bound[o] + k * std::ldexp(std::abs(want[o]) + bound[o], -23);
          EXPECT_NEAR(y[t * n + o], want[o], b)
              << static_cast<int>(act) << " biases " << biases << " t " << t << " o " << o;
          worst = std::max(worst, std::abs(y[t * n + o] - want[o]) / b);
        }
      }
      std::printf("[ activation %d biases %d ] worst error / bound %.3g\n", static_cast<int>(act),
                  biases, worst);
    }
  }
}

TEST(ExpertsFfn, RefusesIdsOutOfRangeNoWeightsAndExpertsThatDoNotChain) {
  CpuBackend be(1);
  const std::int64_t n = 16, n_ff = 8, T = 3;
  const std::int32_t n_exp = 4, k = 2;
  Experts ex(n, n_ff, n_exp, Activation::Silu, false, 20);
  std::vector<std::int32_t> ids = random_ids(T, k, n_exp, 21);
  const std::vector<float> x = random_vec(static_cast<std::size_t>(T * n), 22);
  const std::vector<float> wts(T * k, 0.5f);
  std::vector<float> y(T * n);
  ids[3] = n_exp;  // out of range: refused, not read past the tensor
  EXPECT_THROW(be.experts_ffn(ex.f, x.data(), T, ids.data(), k, wts.data(), y.data()), Error);
  ids[3] = -1;
  EXPECT_THROW(be.experts_ffn(ex.f, x.data(), T, ids.data(), k, wts.data(), y.data()), Error);
  ids[3] = 0;
  EXPECT_THROW(be.experts_ffn(ex.f, x.data(), T, ids.data(), k, nullptr, y.data()), Error);
  ExpertsFfn wrong = ex.f;
  wrong.down = ex.f.up;  // [n] -> [n_ff] where [n_ff] -> [n] belongs
  EXPECT_THROW(be.experts_ffn(wrong, x.data(), T, ids.data(), k, wts.data(), y.data()), Error);
  wrong = ex.f;
  wrong.up.n_expert = n_exp - 1;
  EXPECT_THROW(be.experts_ffn(wrong, x.data(), T, ids.data(), k, wts.data(), y.data()), Error);
}

// The experts run a group at a time (at most set_expert_group_bytes of their
// rows' inputs and intermediates, each expert whole). Every expert's GEMMs see
// the same tokens in any grouping, and each token adds its slots in the same
// order, so this is one computation claimed to be independent of the
// grouping, hence exact equality: groups of one expert each, of a few rows
// (several experts per group) and all at once give the same bits.
TEST(ExpertsFfn, GroupsOfExpertsGiveTheSameBitsAsOneGroup) {
  const std::int64_t n = 67, n_ff = 29, T = 40;
  const std::int32_t n_exp = 9, k = 3;
  const Experts ex(n, n_ff, n_exp, Activation::SwigluOai, true, 5);
  const std::vector<std::int32_t> ids = random_ids(T, k, n_exp, 6);
  const std::vector<float> wts = random_vec(T * k, 7);
  const std::vector<float> x = random_vec(static_cast<std::size_t>(T * n), 8);
  const auto run = [&](std::int64_t group_bytes) {
    CpuBackend be(2);
    be.set_expert_group_bytes(group_bytes);
    std::vector<float> y(T * n);
    be.experts_ffn(ex.f, x.data(), T, ids.data(), k, wts.data(), y.data());
    return y;
  };
  const std::vector<float> one_group = run(std::int64_t{1} << 30);
  EXPECT_EQ(run(1), one_group) << "one expert per group";
  EXPECT_EQ(run(40 * (n + 2 * n_ff) * 4), one_group) << "groups of up to 40 rows";
}

// Decode reads only the chosen experts' bytes: the one expert no token chose
// lies in pages with no access (in gate, up and down alike: square experts
// share one guarded tensor), so a single read of it (a row of a matmul, a
// packing pass) ends the test with a fault. The results equal those from an
// ordinary buffer holding the same weights.
TEST(ExpertsFfn, NeverReadsAnExpertNoTokenChose) {
  CpuBackend be(2);
  const std::int64_t n = 64, T = 5;
  const std::int32_t n_exp = 4, k = 2, unchosen = 2;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t bytes = static_cast<std::size_t>(n * n) * sizeof(float);
  const std::size_t stride = (bytes + page - 1) / page * page;
  void* region =
      ::mmap(nullptr, stride * n_exp, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(region, MAP_FAILED);
  auto* base = static_cast<std::byte*>(region);
  const std::vector<float> w = random_vec(static_cast<std::size_t>(n_exp * n * n), 5, 0.3f);
  for (std::int32_t e = 0; e < n_exp; ++e)
    std::memcpy(base + e * stride, w.data() + e * n * n, bytes);
  ASSERT_EQ(::mprotect(base + unchosen * stride, stride, PROT_NONE), 0);

  ExpertsFfn guarded;
  guarded.gate.w = f32_view(w, n, n);
  guarded.gate.w.data = base;
  guarded.gate.n_expert = n_exp;
  guarded.gate.expert_stride = stride;
  guarded.up = guarded.down = guarded.gate;
  ExpertsFfn plain = guarded;
  plain.gate = f32_experts(w, n, n, n_exp);
  plain.up = plain.down = plain.gate;

  std::vector<std::int32_t> ids(T * k);
  for (std::int64_t t = 0; t < T; ++t) {
    ids[t * k] = 3;
    ids[t * k + 1] = t % 2 == 0 ? 0 : 1;
  }
  const std::vector<float> x = random_vec(static_cast<std::size_t>(T * n), 6);
  const std::vector<float> wts = random_vec(T * k, 7);
  for (std::int64_t n_tokens : {std::int64_t{1}, T}) {
    std::vector<float> got(n_tokens * n), want(n_tokens * n);
    be.experts_ffn(guarded, x.data(), n_tokens, ids.data(), k, wts.data(), got.data());
    be.experts_ffn(plain, x.data(), n_tokens, ids.data(), k, wts.data(), want.data());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << n_tokens;
  }
  ::munmap(region, stride * n_exp);
}

TEST(HostOps, BiasScaleSoftcapAndKvStore) {
  CpuBackend be(1);
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  const std::vector<float> b = {10, 20, 30};
  be.add_bias(x.data(), b.data(), 2, 3);
  EXPECT_EQ(x, (std::vector<float>{11, 22, 33, 14, 25, 36}));
  be.scale(x.data(), 6, 0.5f);
  EXPECT_EQ(x, (std::vector<float>{5.5f, 11, 16.5f, 7, 12.5f, 18}));
  std::vector<float> c = {-100.0f, 0.0f, 0.5f};
  be.softcap(c.data(), 3, 2.0f);
  EXPECT_NEAR(c[0], -2.0f, 1e-6);
  EXPECT_EQ(c[1], 0.0f);
  EXPECT_NEAR(c[2], 2.0 * std::tanh(0.25), 1e-6);

  // Two rows of width 3 into cells 2 and 0 of a 3-cell cache, in both types.
  const std::vector<float> k = {1.5f, -2.0f, 0.25f, 3.0f, 4.0f, -0.5f};
  const std::vector<float> v = {0.5f, 1.0f, 2.0f, -1.0f, -3.0f, 8.0f};
  const std::vector<std::uint32_t> cells = {2, 0};
  std::vector<float> kc(9, 0.0f), vc(9, 0.0f);
  be.store_kv(kc.data(), vc.data(), KvType::F32, 3, cells, k.data(), v.data());
  EXPECT_EQ(kc, (std::vector<float>{3, 4, -0.5f, 0, 0, 0, 1.5f, -2, 0.25f}));
  EXPECT_EQ(vc, (std::vector<float>{-1, -3, 8, 0, 0, 0, 0.5f, 1, 2}));
  std::vector<std::uint16_t> kh(9, 0), vh(9, 0);
  be.store_kv(kh.data(), vh.data(), KvType::F16, 3, cells, k.data(), v.data());
  for (int i = 0; i < 9; ++i) {  // these values are exact in F16
    EXPECT_EQ(fp16_to_f32(kh[i]), kc[i]) << i;
    EXPECT_EQ(fp16_to_f32(vh[i]), vc[i]) << i;
  }
}

}  // namespace
}  // namespace seam
