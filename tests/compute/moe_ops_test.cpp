// The backend's mixture-of-experts ops (route, matmul_experts) and host ops
// (add_bias, scale, softcap, store_kv) against plain scalar references.
// matmul_experts runs on the active CPU level (SEAM_CPU); its float32 sums are
// compared with float64 ones within n_in * 2^-22 * sum |w x|, a few times the
// worst-case rounding of a length-n_in float32 dot product.
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

TEST(MatmulExperts, PerSlotAndWeightedSumMatchScalarReference) {
  CpuBackend be(2);
  const std::int64_t n_in = 67, n_out = 29, T = 7;
  const std::int32_t n_exp = 5, k = 2;
  const std::vector<float> w = random_vec(static_cast<std::size_t>(n_exp * n_out * n_in), 1);
  const ExpertsView ev = f32_experts(w, n_in, n_out, n_exp);
  // Expert 4 is never chosen; expert 0 by every token (a full-batch group).
  std::vector<std::int32_t> ids(T * k);
  for (std::int64_t t = 0; t < T; ++t) {
    ids[t * k] = 0;
    ids[t * k + 1] = 1 + static_cast<std::int32_t>(t % 3);
  }
  const std::vector<float> wts = random_vec(T * k, 2);
  for (std::int32_t x_slots : {1, k}) {
    const std::vector<float> x = random_vec(static_cast<std::size_t>(T * x_slots * n_in), 3);
    std::vector<float> per_slot(T * k * n_out), summed(T * n_out, 123.0f);
    be.matmul_experts(ev, x.data(), x_slots, T, ids.data(), k, nullptr, per_slot.data());
    be.matmul_experts(ev, x.data(), x_slots, T, ids.data(), k, wts.data(), summed.data());
    for (std::int64_t t = 0; t < T; ++t) {
      std::vector<double> want_sum(n_out, 0.0), bound_sum(n_out, 0.0);
      for (std::int32_t j = 0; j < k; ++j) {
        const float* xr = x.data() + (t * x_slots + j % x_slots) * n_in;
        const float* we = w.data() + static_cast<std::size_t>(ids[t * k + j]) * n_out * n_in;
        for (std::int64_t o = 0; o < n_out; ++o) {
          double dot = 0, mag = 0;
          for (std::int64_t i = 0; i < n_in; ++i) {
            dot += static_cast<double>(we[o * n_in + i]) * xr[i];
            mag += std::abs(static_cast<double>(we[o * n_in + i]) * xr[i]);
          }
          const double bound = n_in * std::ldexp(1.0, -22) * mag;
          EXPECT_NEAR(per_slot[(t * k + j) * n_out + o], dot, bound) << t << " " << j << " " << o;
          want_sum[o] += wts[t * k + j] * dot;
          bound_sum[o] += std::abs(wts[t * k + j]) * (bound + mag * std::ldexp(1.0, -23));
        }
      }
      for (std::int64_t o = 0; o < n_out; ++o) {
        EXPECT_NEAR(summed[t * n_out + o], want_sum[o], bound_sum[o] + 1e-6) << t << " " << o;
      }
    }
  }
  ids[3] = n_exp;  // out of range: refused, not read past the tensor
  std::vector<float> y(T * k * n_out);
  const std::vector<float> x = random_vec(static_cast<std::size_t>(T * n_in), 4);
  EXPECT_THROW(be.matmul_experts(ev, x.data(), 1, T, ids.data(), k, nullptr, y.data()), Error);
}

// The experts' rows are gathered a group of experts at a time (at most
// set_expert_group_bytes of them, each expert whole). Every expert's GEMM sees
// the same tokens in any grouping, and each token's weighted sum adds its slots
// in the same order, so this is one computation claimed to be independent of
// the grouping, hence exact equality: groups of one expert each, of a few rows
// (several experts per group) and all at once give the same bits.
TEST(MatmulExperts, GroupsOfExpertsGiveTheSameBitsAsOneGroup) {
  const std::int64_t n_in = 67, n_out = 29, T = 40;
  const std::int32_t n_exp = 9, k = 3;
  const std::vector<float> w = random_vec(static_cast<std::size_t>(n_exp * n_out * n_in), 5);
  const ExpertsView ev = f32_experts(w, n_in, n_out, n_exp);
  std::mt19937 rng(6);
  std::vector<std::int32_t> ids(T * k);
  for (std::int64_t t = 0; t < T; ++t) {
    std::vector<std::int32_t> e(n_exp);
    std::iota(e.begin(), e.end(), 0);
    std::shuffle(e.begin(), e.end(), rng);
    std::copy(e.begin(), e.begin() + k, ids.begin() + t * k);
  }
  const std::vector<float> wts = random_vec(T * k, 7);
  const std::vector<float> x = random_vec(static_cast<std::size_t>(T * n_in), 8);
  const auto run = [&](std::int64_t group_bytes, const float* weights) {
    CpuBackend be(2);
    be.set_expert_group_bytes(group_bytes);
    std::vector<float> y(weights ? T * n_out : T * k * n_out);
    be.matmul_experts(ev, x.data(), 1, T, ids.data(), k, weights, y.data());
    return y;
  };
  for (const float* weights : {static_cast<const float*>(nullptr), wts.data()}) {
    const std::vector<float> one_group = run(std::int64_t{1} << 30, weights);
    EXPECT_EQ(run(1, weights), one_group) << "one expert per group";
    EXPECT_EQ(run(40 * n_in * 4, weights), one_group) << "groups of up to 40 rows";
  }
}

// Decode reads only the chosen experts' bytes: the one expert no token chose
// lies in pages with no access, so a single read of it (a row of the matmul,
// a packing pass) ends the test with a fault. The results equal those from an
// ordinary buffer holding the same weights.
TEST(MatmulExperts, NeverReadsAnExpertNoTokenChose) {
  CpuBackend be(2);
  const std::int64_t n_in = 64, n_out = 48, T = 5;
  const std::int32_t n_exp = 4, k = 2, unchosen = 2;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t bytes = static_cast<std::size_t>(n_out * n_in) * sizeof(float);
  const std::size_t stride = (bytes + page - 1) / page * page;
  void* region =
      ::mmap(nullptr, stride * n_exp, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(region, MAP_FAILED);
  auto* base = static_cast<std::byte*>(region);
  const std::vector<float> w = random_vec(static_cast<std::size_t>(n_exp * n_out * n_in), 5);
  for (std::int32_t e = 0; e < n_exp; ++e)
    std::memcpy(base + e * stride, w.data() + e * n_out * n_in, bytes);
  ASSERT_EQ(::mprotect(base + unchosen * stride, stride, PROT_NONE), 0);

  ExpertsView guarded;
  guarded.w = f32_view(w, n_in, n_out);
  guarded.w.data = base;
  guarded.n_expert = n_exp;
  guarded.expert_stride = stride;
  ExpertsView plain = guarded;
  plain.w.data = reinterpret_cast<const std::byte*>(w.data());
  plain.expert_stride = bytes;

  std::vector<std::int32_t> ids(T * k);
  for (std::int64_t t = 0; t < T; ++t) {
    ids[t * k] = 3;
    ids[t * k + 1] = t % 2 == 0 ? 0 : 1;
  }
  const std::vector<float> x = random_vec(static_cast<std::size_t>(T * n_in), 6);
  const std::vector<float> wts = random_vec(T * k, 7);
  for (std::int64_t n_tokens : {std::int64_t{1}, T}) {
    std::vector<float> got(n_tokens * n_out), want(n_tokens * n_out);
    be.matmul_experts(guarded, x.data(), 1, n_tokens, ids.data(), k, wts.data(), got.data());
    be.matmul_experts(plain, x.data(), 1, n_tokens, ids.data(), k, wts.data(), want.data());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << n_tokens;
  }
  ::munmap(region, stride * n_exp);
}

// gpt-oss's expert biases: per slot, and weighted into the token's sum, with
// hand-picked values whose sums are exact in float.
TEST(AddExpertBias, PerSlotAndWeighted) {
  CpuBackend be(1);
  const std::int32_t n_exp = 3, k = 2;
  const std::int64_t n = 2, T = 2;
  const std::vector<float> bias = {1, 2, 10, 20, 100, 200};  // [n_exp][n]
  const std::vector<std::int32_t> ids = {2, 0, 1, 2};
  const std::vector<float> wts = {0.5f, 0.25f, 2.0f, -1.0f};
  std::vector<float> per_slot(T * k * n, 1.0f);
  be.add_expert_bias(per_slot.data(), bias.data(), n_exp, n, T, ids.data(), k, nullptr);
  EXPECT_EQ(per_slot, (std::vector<float>{101, 201, 2, 3, 11, 21, 101, 201}));
  std::vector<float> summed(T * n, 0.5f);
  be.add_expert_bias(summed.data(), bias.data(), n_exp, n, T, ids.data(), k, wts.data());
  // t0: 0.5 * [100, 200] + 0.25 * [1, 2]; t1: 2 * [10, 20] - [100, 200]
  EXPECT_EQ(summed, (std::vector<float>{50.75f, 101.0f, -79.5f, -159.5f}));
  const std::vector<std::int32_t> bad = {0, 3, 1, 1};
  EXPECT_THROW(be.add_expert_bias(summed.data(), bias.data(), n_exp, n, T, bad.data(), k, nullptr),
               Error);
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
