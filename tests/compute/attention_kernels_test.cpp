// The attention steps (attention_kernels.h) at every CPU level this machine
// runs. query_chunk: each query's state as if it were alone in the call, and
// within a rounding bound of the scalar level's. decode_chunk's look-ahead:
// while at cell j it asks for the K and V slices of cell j +
// prefetch_distance(kv), into the next call's cells. A prefetch is a hint, so
// the state it leaves must be the bits of the same calls told of no next
// cells; and the cell lists here are heap allocations of exactly the cells
// named, so under AddressSanitizer (CI's second run) an index read past them
// fails the test. Decode's numbers themselves are attention_test.cpp's:
// against the two-pass reference through attention_tiled, which runs these
// kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "compute/attention_kernels.h"
#include "compute/quant.h"
#include "core/half.h"

namespace seam {
namespace {

// Rows of `width` floats in a cache of type t (kv_row_bytes(t, width) each).
std::vector<std::byte> encode(KvType t, const std::vector<float>& x, std::int64_t width) {
  const std::size_t rows = x.size() / static_cast<std::size_t>(width);
  const std::size_t rb = kv_row_bytes(t, width);
  std::vector<std::byte> out(rows * rb);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* src = x.data() + r * static_cast<std::size_t>(width);
    std::byte* dst = out.data() + r * rb;
    if (t == KvType::F32) {
      std::memcpy(dst, src, rb);
    } else if (t == KvType::F16) {
      for (std::int64_t i = 0; i < width; ++i) {
        const std::uint16_t h = f32_to_fp16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
    } else {
      quant::quantize_row_q8_0(src, dst, width);
    }
  }
  return out;
}

struct State {
  std::vector<float> m, l, acc;
};

// The online-softmax state of nq query heads before any cell.
State fresh_state(int nq, int hd) {
  return State{std::vector<float>(nq, -std::numeric_limits<float>::infinity()),
               std::vector<float>(nq, 0.0f),
               std::vector<float>(static_cast<std::size_t>(nq) * hd, 0.0f)};
}

// The online-softmax state of nq query heads reading kv head `kv` after
// decode_chunk over `cells` a chunk at a time, as run_segment calls it. With
// look_ahead each call is told the next chunk's cells; without, each chunk
// gets a list of its own holding exactly its cells.
State decode(const attn::AttnFns& f, const attn::KvHead& kv,
             const std::vector<std::uint32_t>& cells, int hd, int nq, const std::vector<float>& q,
             float scale, bool look_ahead) {
  State s = fresh_state(nq, hd);
  const int n = static_cast<int>(cells.size());
  for (int c0 = 0; c0 < n; c0 += kAttnChunk) {
    const int nc = std::min(kAttnChunk, n - c0);
    if (look_ahead) {
      const int n_next = std::min(kAttnChunk, n - c0 - nc);
      f.decode_chunk(kv, cells.data() + c0, nc, n_next, hd, nq, q.data(), scale, 0.0f, s.m.data(),
                     s.l.data(), s.acc.data());
    } else {
      const std::vector<std::uint32_t> own(cells.begin() + c0, cells.begin() + c0 + nc);
      f.decode_chunk(kv, own.data(), nc, 0, hd, nq, q.data(), scale, 0.0f, s.m.data(), s.l.data(),
                     s.acc.data());
    }
  }
  return s;
}

TEST(AttentionKernels, DecodeAsksAheadOnlyWithinItsCellsAndKeepsTheBits) {
  constexpr std::uint32_t kCells = 300;
  constexpr int kHeadsKv = 2;
  constexpr int kQueryHeads = 6;  // two groups of heads: only the first asks ahead
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const CpuLevel level : {CpuLevel::Scalar, CpuLevel::Avx2, CpuLevel::Avx512}) {
    if (level > detected_cpu_level()) {
      std::printf("(%s skipped: this CPU runs up to %s)\n", cpu_level_name(level),
                  cpu_level_name(detected_cpu_level()));
      continue;
    }
    const attn::AttnFns& f = attn::attn_fns(level);
    // Look-ahead distances (prefetch_distance) from 1 to a whole chunk.
    for (const int hd : {40, 64, 256, 4096}) {
      const std::int64_t width = std::int64_t{kHeadsKv} * hd;
      std::vector<float> k(kCells * width), v(kCells * width), q(kQueryHeads * hd);
      for (float& x : k) x = normal(rng);
      for (float& x : v) x = normal(rng);
      for (float& x : q) x = normal(rng);
      const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
      for (const KvType t : {KvType::F32, KvType::F16, KvType::Q8_0}) {
        if (t == KvType::Q8_0 && hd % 32 != 0) continue;
        const std::vector<std::byte> kc = encode(t, k, width), vc = encode(t, v, width);
        for (const std::uint32_t n : {1u, 31u, 32u, 33u, 100u}) {
          std::vector<std::uint32_t> order(kCells);
          std::iota(order.begin(), order.end(), 0u);
          std::shuffle(order.begin(), order.end(), rng);
          const std::vector<std::uint32_t> cells(order.begin(), order.begin() + n);  // exact size
          for (int g = 0; g < kHeadsKv; ++g) {
            const attn::KvHead kv{kc.data(),
                                  vc.data(),
                                  t,
                                  kv_row_bytes(t, width),
                                  kv_row_bytes(t, std::int64_t{g} * hd),
                                  kv_row_bytes(t, hd)};
            const State ahead = decode(f, kv, cells, hd, kQueryHeads, q, scale, true);
            const State alone = decode(f, kv, cells, hd, kQueryHeads, q, scale, false);
            const std::string where = std::string(cpu_level_name(level)) + " head size " +
                                      std::to_string(hd) + " type " +
                                      std::to_string(static_cast<int>(t)) + ", " +
                                      std::to_string(n) + " cells, kv head " + std::to_string(g);
            EXPECT_EQ(ahead.m, alone.m) << where;
            EXPECT_EQ(ahead.l, alone.l) << where;
            EXPECT_EQ(ahead.acc, alone.acc) << where;
            // Every head saw its cells: the largest weight is e^0 = 1.
            for (float l : ahead.l) EXPECT_GE(l, 1.0f) << where;
          }
        }
      }
    }
  }
}

// Two query_chunk calls for queries [h0, h0 + nq): chunk 0 over all its cells,
// then chunk 1 over [jlo, jhi), so the second may find a new maximum and
// rescale what the first left.
void fold_two_chunks(const attn::AttnFns& f, const std::vector<float>& q,
                     const std::vector<float> (&kt)[2], const std::vector<float> (&v)[2], int hd,
                     int h0, int nq, float scale, float softcap, int jlo, int jhi, State& s) {
  const float* qh = q.data() + static_cast<std::size_t>(h0) * hd;
  float* acc = s.acc.data() + static_cast<std::size_t>(h0) * hd;
  f.query_chunk(qh, kt[0].data(), v[0].data(), 0, kAttnChunk, hd, nq, scale, softcap,
                s.m.data() + h0, s.l.data() + h0, acc);
  f.query_chunk(qh, kt[1].data(), v[1].data(), jlo, jhi, hd, nq, scale, softcap, s.m.data() + h0,
                s.l.data() + h0, acc);
}

// query_chunk's contract (attention_kernels.h): a query's state does not
// depend on the others beside it in the call, for any range [jlo, jhi) of the
// chunk's cells, with a soft cap or not. The SIMD levels fold their queries'
// scores a group at a time (AVX2 in pairs, AVX-512 up to four), so here every
// group size meets the bits of a lone query. attention_tiled passes jlo = 0
// only: this is where a range starting inside the chunk is tested. Each level
// against the scalar one within attention_test.cpp's rounding bound: a score
// carries at most hd roundings of terms up to A = scale sum |q_d k_d|, a
// weight moves by twice that plus its exp's and the sum's roundings, and the
// output acc / l is a convex combination of V rows: |d out| <= max|v| u
// (2 hd A + 2 n + 16), n the cells seen (tanh, the cap, is 1-Lipschitz).
TEST(AttentionKernels, QueryChunkFoldsEachQueryAsIfAlone) {
  constexpr int C = kAttnChunk;
  constexpr int kQueries = 7;  // AVX-512: a group of 4 and one of 3; AVX2: 3 pairs and one
  constexpr double kU32 = 1.0 / 16777216.0;
  const std::pair<int, int> ranges[] = {{0, C}, {0, 17}, {5, C}, {3, 29}, {C - 1, C}, {8, 24}};
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const int hd : {20, 40, 64, 80}) {
    std::vector<float> q(static_cast<std::size_t>(kQueries) * hd), kt[2], v[2];
    for (float& x : q) x = normal(rng);
    for (int c = 0; c < 2; ++c) {
      kt[c].resize(static_cast<std::size_t>(hd) * C);
      v[c].resize(static_cast<std::size_t>(C) * hd);
      for (float& x : kt[c]) x = normal(rng);
      for (float& x : v[c]) x = normal(rng);
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    double a_max = 0, v_max = 0;
    for (int h = 0; h < kQueries; ++h)
      for (int c = 0; c < 2; ++c)
        for (int j = 0; j < C; ++j) {
          double sum = 0;
          for (int d = 0; d < hd; ++d)
            sum += std::abs(static_cast<double>(q[h * hd + d]) * kt[c][d * C + j]);
          a_max = std::max(a_max, sum * scale);
        }
    for (int c = 0; c < 2; ++c)
      for (float x : v[c]) v_max = std::max(v_max, static_cast<double>(std::abs(x)));
    for (const float softcap : {0.0f, 3.0f}) {
      for (const auto& [jlo, jhi] : ranges) {
        const double bound = v_max * kU32 * (2.0 * hd * a_max + 2.0 * (C + jhi - jlo) + 16.0);
        std::vector<float> scalar_out;
        for (int lv = 0; lv <= static_cast<int>(detected_cpu_level()); ++lv) {
          const auto level = static_cast<CpuLevel>(lv);
          const attn::AttnFns& f = attn::attn_fns(level);
          State together = fresh_state(kQueries, hd), alone = fresh_state(kQueries, hd);
          fold_two_chunks(f, q, kt, v, hd, 0, kQueries, scale, softcap, jlo, jhi, together);
          for (int h = 0; h < kQueries; ++h)
            fold_two_chunks(f, q, kt, v, hd, h, 1, scale, softcap, jlo, jhi, alone);
          const std::string where = std::string(cpu_level_name(level)) + " head size " +
                                    std::to_string(hd) + " softcap " + std::to_string(softcap) +
                                    " cells [" + std::to_string(jlo) + ", " + std::to_string(jhi) +
                                    ")";
          EXPECT_EQ(together.m, alone.m) << where;
          EXPECT_EQ(together.l, alone.l) << where;
          EXPECT_EQ(together.acc, alone.acc) << where;
          std::vector<float> out(together.acc.size());
          for (std::size_t i = 0; i < out.size(); ++i)
            out[i] = together.acc[i] / together.l[i / static_cast<std::size_t>(hd)];
          if (level == CpuLevel::Scalar)
            scalar_out = out;
          else
            for (std::size_t i = 0; i < out.size(); ++i)
              ASSERT_LE(std::abs(static_cast<double>(out[i]) - scalar_out[i]), bound)
                  << where << " against scalar, element " << i;
        }
      }
    }
  }
}

// 32 KiB of K and V slices ahead, at least the next cell and at most a chunk.
TEST(AttentionKernels, PrefetchDistanceIsThirtyTwoKiBOfSlicesWithinAChunk) {
  const auto distance = [](KvType t, std::int64_t hd) {
    attn::KvHead kv{};
    kv.slice_bytes = kv_row_bytes(t, hd);
    return attn::prefetch_distance(kv);
  };
  EXPECT_EQ(distance(KvType::F16, 512), 16);  // 1 KiB slices: 32 KiB / 2 KiB
  EXPECT_EQ(distance(KvType::F32, 256), 16);
  EXPECT_EQ(distance(KvType::Q8_0, 512), 30);         // 16 blocks of 34 bytes
  EXPECT_EQ(distance(KvType::F16, 256), kAttnChunk);  // 32 cells' worth: a chunk
  EXPECT_EQ(distance(KvType::F16, 64), kAttnChunk);   // 128 cells' worth: a chunk at most
  EXPECT_EQ(distance(KvType::F32, 8192), 1);          // 32 KiB slices: the next cell
}

}  // namespace
}  // namespace seam
