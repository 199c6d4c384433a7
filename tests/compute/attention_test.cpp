// The tiled online-softmax attention against the two-pass scalar reference
// (ops::attention_head) on random data: every mask shape the KV cache makes
// (causal, with cached depth, sliding windows, several sequences sharing
// cells, rows that see nothing, cells in any order), GQA ratios, odd head
// sizes, soft-capping, F32, F16 and Q8_0 caches, 1 to 4 threads, every CPU
// level this machine runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <random>
#include <vector>

#include "compute/attention.h"
#include "compute/ops.h"
#include "compute/quant.h"
#include "core/half.h"
#include "seam/error.h"

namespace seam {
namespace {

constexpr double kU32 = 1.0 / 16777216.0;  // 2^-24: float's unit roundoff

struct Problem {
  std::int32_t n_head = 4, n_head_kv = 2, head_dim = 32;
  float softcap = 0.0f;
  std::vector<float> sinks;  // [n_head] or empty (no sinks)
  std::uint32_t n_cells = 0;
  std::vector<std::vector<std::uint32_t>> rows;  // the cells each query row sees
};

struct Data {
  std::vector<float> q, k, v;  // q [T][n_head*hd]; k, v [n_cells][n_head_kv*hd]
  std::vector<std::uint16_t> k16, v16;
  std::vector<std::byte> k8, v8;                 // Q8_0, when head_dim is a multiple of 32
  std::vector<std::uint32_t> begin, end, cells;  // each row's list of its own
};

Data make_data(const Problem& p, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  Data d;
  const std::size_t T = p.rows.size();
  d.q.resize(T * p.n_head * p.head_dim);
  d.k.resize(std::size_t{p.n_cells} * p.n_head_kv * p.head_dim);
  d.v.resize(d.k.size());
  for (float& x : d.q) x = nd(rng);
  for (float& x : d.k) x = nd(rng);
  for (float& x : d.v) x = nd(rng);
  for (float x : d.k) d.k16.push_back(f32_to_fp16(x));
  for (float x : d.v) d.v16.push_back(f32_to_fp16(x));
  if (p.head_dim % 32 == 0) {
    const std::int64_t w = std::int64_t{p.n_head_kv} * p.head_dim;
    const std::size_t rb = kv_row_bytes(KvType::Q8_0, w);
    d.k8.resize(p.n_cells * rb);
    d.v8.resize(p.n_cells * rb);
    for (std::uint32_t c = 0; c < p.n_cells; ++c) {
      quant::quantize_row_q8_0(d.k.data() + c * w, d.k8.data() + c * rb, w);
      quant::quantize_row_q8_0(d.v.data() + c * w, d.v8.data() + c * rb, w);
    }
  }
  for (const auto& r : p.rows) {
    d.begin.push_back(static_cast<std::uint32_t>(d.cells.size()));
    d.cells.insert(d.cells.end(), r.begin(), r.end());
    d.end.push_back(static_cast<std::uint32_t>(d.cells.size()));
  }
  return d;
}

AttentionArgs args(const Problem& p, const Data& d, KvType type, float* out) {
  AttentionArgs a;
  a.q = d.q.data();
  a.k = type == KvType::F32   ? static_cast<const void*>(d.k.data())
        : type == KvType::F16 ? static_cast<const void*>(d.k16.data())
                              : static_cast<const void*>(d.k8.data());
  a.v = type == KvType::F32   ? static_cast<const void*>(d.v.data())
        : type == KvType::F16 ? static_cast<const void*>(d.v16.data())
                              : static_cast<const void*>(d.v8.data());
  a.kv_type = type;
  a.out = out;
  a.n_tokens = static_cast<std::int64_t>(p.rows.size());
  a.n_head = p.n_head;
  a.n_head_kv = p.n_head_kv;
  a.head_dim = p.head_dim;
  a.scale = 1.0f / std::sqrt(static_cast<float>(p.head_dim));
  a.softcap = p.softcap;
  a.mask = {d.begin, d.end, d.cells};
  a.sinks = p.sinks.empty() ? nullptr : p.sinks.data();
  return a;
}

std::vector<float> reference(const Problem& p, const Data& d, KvType type) {
  std::vector<float> out(p.rows.size() * p.n_head * p.head_dim, 123.0f);
  const AttentionArgs a = args(p, d, type, out.data());
  std::vector<float> scores, row;
  for (std::int64_t t = 0; t < a.n_tokens; ++t)
    for (std::int32_t h = 0; h < p.n_head; ++h) ops::attention_head(a, t, h, scores, row);
  return out;
}

// in_place: out is the queries' own buffer (AttentionArgs allows out == q).
std::vector<float> tiled(const Problem& p, const Data& d, KvType type, int threads, CpuLevel level,
                         bool in_place = false) {
  std::vector<float> out = in_place ? d.q : std::vector<float>(d.q.size(), 123.0f);
  AttentionArgs a = args(p, d, type, out.data());
  if (in_place) a.q = out.data();
  ThreadPool pool(threads);
  AttentionScratch scratch;
  attention_tiled(a, pool, scratch, level);
  return out;
}

// The largest |scale q.k| summed term by term (A in the bounds below), the
// longest row and the largest |v|.
struct Sizes {
  double a_max = 0, v_max = 0, k_max = 0;
  double q1_max = 0;  // largest scale * sum_i |q_i| of one query head
  std::size_t n_max = 0;
};

Sizes sizes(const Problem& p, const Data& d) {
  Sizes s;
  const std::int32_t hd = p.head_dim, rep = p.n_head / p.n_head_kv;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  for (std::size_t t = 0; t < p.rows.size(); ++t) {
    s.n_max = std::max(s.n_max, p.rows[t].size());
    for (std::int32_t h = 0; h < p.n_head; ++h) {
      for (std::uint32_t c : p.rows[t]) {
        double sum = 0;
        for (std::int32_t i = 0; i < hd; ++i)
          sum += std::abs(d.q[(t * p.n_head + h) * hd + i] *
                          d.k[(c * p.n_head_kv + h / rep) * hd + i]);
        s.a_max = std::max(s.a_max, sum * scale);
      }
    }
  }
  for (float x : d.v) s.v_max = std::max(s.v_max, static_cast<double>(std::abs(x)));
  for (float x : d.k) s.k_max = std::max(s.k_max, static_cast<double>(std::abs(x)));
  for (std::size_t i = 0; i < d.q.size(); i += hd) {
    double sum = 0;
    for (std::int32_t j = 0; j < hd; ++j) sum += std::abs(d.q[i + j]);
    s.q1_max = std::max(s.q1_max, sum * scale);
  }
  return s;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  return m;
}

// One sequence: `depth` cached cells, then `n` new rows at the next positions;
// cells are numbered in a shuffled order (the cache hands them out so after
// evictions). window > 0: a row sees only its last `window` positions.
Problem sequence(std::uint32_t depth, std::uint32_t n, std::uint32_t window, unsigned seed) {
  Problem p;
  p.n_cells = depth + n + 5;
  std::vector<std::uint32_t> cell_of(p.n_cells);
  std::iota(cell_of.begin(), cell_of.end(), 0u);
  std::shuffle(cell_of.begin(), cell_of.end(), std::mt19937(seed));
  for (std::uint32_t t = 0; t < n; ++t) {
    const std::uint32_t pos = depth + t;
    const std::uint32_t first = window > 0 && pos + 1 > window ? pos + 1 - window : 0;
    std::vector<std::uint32_t> row;
    for (std::uint32_t q = first; q <= pos; ++q) row.push_back(cell_of[q]);
    p.rows.push_back(row);
  }
  return p;
}

void check(const Problem& p, const std::string& name) {
  const Data d = make_data(p, 7);
  const Sizes s = sizes(p, d);
  // Same cache data, two summation orders: each score carries at most hd
  // roundings (|ds| <= hd u A), a softmax weight moves by at most 2 max|ds|
  // plus the rounding of its exp (a few ulp) and of a sum of n terms, and the
  // output is a convex combination of V: |d out| <= max|v| u (2 hd A + 2 n + 16).
  // (With a soft cap, tanh is 1-Lipschitz in the score, so the same bound holds.
  // A sink is one more exact term of the denominator: weights still sum to <= 1.)
  const double bound = s.v_max * kU32 * (2.0 * p.head_dim * s.a_max + 2.0 * s.n_max + 16.0);
  // F16 against F32 data: each element of K and V moves by at most 2^-11 of
  // itself, so the output moves by at most max|v| 2^-11 (1 + 2 A) on top.
  const double bound16 = bound + s.v_max * (1.0 / 2048.0) * (1.0 + 2.0 * s.a_max);
  // Q8_0 against F32 data: an element x of a block with largest |x| = amax
  // becomes q d', d = amax / 127 rounded to F16, |q| <= 127, so it moves by at
  // most d / 2 + 127 d 2^-11 <= amax (1/254 + 2^-11) =: amax e8. Each score
  // moves by at most D = scale sum|q_i| k_max e8, each softmax weight by a
  // factor within e^(+-2D), so the output moves by at most
  // v_max (e^(2D) - 1) + v_max e8 on top of the rounding bound.
  const double e8 = 1.0 / 254.0 + 1.0 / 2048.0;
  const double bound8 = bound + s.v_max * (std::expm1(2.0 * s.q1_max * s.k_max * e8) + e8);
  const bool has_q8 = p.head_dim % 32 == 0;
  const auto ref32 = reference(p, d, KvType::F32);
  const auto ref16 = reference(p, d, KvType::F16);
  const auto ref8 = has_q8 ? reference(p, d, KvType::Q8_0) : std::vector<float>{};
  double worst = 0, worst16 = 0, worst8 = 0;
  std::vector<KvType> types = {KvType::F32, KvType::F16};
  if (has_q8) types.push_back(KvType::Q8_0);
  for (int lv = 0; lv <= static_cast<int>(detected_cpu_level()); ++lv) {
    const auto level = static_cast<CpuLevel>(lv);
    for (int threads = 1; threads <= 4; ++threads) {
      for (KvType type : types) {
        const auto& ref = type == KvType::F32 ? ref32 : type == KvType::F16 ? ref16 : ref8;
        const auto got = tiled(p, d, type, threads, level);
        // The same computation with its output over its queries: every query
        // is read in full before its output is written, so the same bits.
        EXPECT_EQ(tiled(p, d, type, threads, level, true), got)
            << name << " in place, " << cpu_level_name(level) << " threads " << threads;
        const double diff = max_abs_diff(got, ref);
        EXPECT_LE(diff, bound) << name << " " << cpu_level_name(level) << " threads " << threads
                               << " type " << static_cast<int>(type);
        worst = std::max(worst, diff);
        if (type == KvType::F16) {
          const double diff16 = max_abs_diff(got, ref32);
          EXPECT_LE(diff16, bound16) << name << " threads " << threads;
          worst16 = std::max(worst16, diff16);
        } else if (type == KvType::Q8_0) {
          const double diff8 = max_abs_diff(got, ref32);
          EXPECT_LE(diff8, bound8) << name << " threads " << threads;
          worst8 = std::max(worst8, diff8);
        }
      }
    }
  }
  std::printf(
      "[ %s ] tiled vs reference %.3g (bound %.3g); F16 vs F32 %.3g (bound %.3g); Q8_0 vs F32 "
      "%.3g (bound %.3g)\n",
      name.c_str(), worst, bound, worst16, bound16, worst8, has_q8 ? bound8 : 0.0);
}

TEST(AttentionTiled, PrefillFromEmptyCache) {
  Problem p = sequence(0, 37, 0, 1);
  check(p, "prefill37");
}

TEST(AttentionTiled, PrefillAfterCachedDepthGqa3) {
  Problem p = sequence(150, 21, 0, 2);
  p.n_head = 6;
  p.n_head_kv = 2;
  p.head_dim = 40;
  check(p, "depth150_gqa3_hd40");
}

TEST(AttentionTiled, DecodeOneRowSplitsTheCells) {
  // 8 queries per kv head (K chunks transposed) and 2 (plain dot products).
  for (const auto& [hd, kv] : {std::pair{64, 1}, std::pair{24, 4}}) {
    Problem p = sequence(700, 1, 0, 3);
    p.n_head = 8;
    p.n_head_kv = kv;
    p.head_dim = hd;
    check(p, "decode_depth700_hd" + std::to_string(hd) + "_kv" + std::to_string(kv));
  }
}

TEST(AttentionTiled, DecodeReadsCacheRowsForEveryGqaRatioAndHeadSize) {
  // One row per tile goes through decode_chunk: query heads per kv head 1 to
  // 8 (groups of 4 and what is left), head sizes with 8- and 16-lane tails and
  // a 64-column block plus a tail, depths that end a chunk early, a soft cap.
  struct Shape {
    std::int32_t rep, kv, hd;
    std::uint32_t depth;
    float softcap;
  };
  std::vector<Shape> shapes = {Shape{1, 3, 20, 45, 0.0f},  Shape{3, 3, 64, 300, 0.0f},
                               Shape{5, 1, 80, 77, 0.0f},  Shape{6, 2, 96, 130, 4.0f},
                               Shape{8, 1, 128, 64, 0.0f}, Shape{7, 1, 36, 33, 2.5f}};
  // Every group size at the head sizes of the model families (64, 128, 256).
  for (std::int32_t hd : {64, 128, 256})
    for (std::int32_t rep = 1; rep <= 4; ++rep)
      shapes.push_back(Shape{rep, 2, hd, 70, rep == 2 ? 3.0f : 0.0f});
  for (const Shape& sh : shapes) {
    Problem p = sequence(sh.depth, 1, 0, 9);
    p.n_head = sh.rep * sh.kv;
    p.n_head_kv = sh.kv;
    p.head_dim = sh.hd;
    p.softcap = sh.softcap;
    check(p, "decode_rep" + std::to_string(sh.rep) + "_hd" + std::to_string(sh.hd) + "_depth" +
                 std::to_string(sh.depth));
  }
}

TEST(AttentionTiled, SeveralSequencesDecodingTogether) {
  // A decode batch: one row per sequence, each its own tile; the cells are
  // interleaved in the cache and one sequence is empty.
  Problem p;
  p.n_cells = 200;
  p.n_head = 6;
  p.n_head_kv = 2;
  p.head_dim = 32;
  std::vector<std::uint32_t> a, b, c;
  for (std::uint32_t x = 0; x < 200; x += 2) a.push_back(x);
  for (std::uint32_t x = 1; x < 150; x += 2) b.push_back(x);
  for (std::uint32_t x = 199; x > 160; x -= 3) c.push_back(x);
  p.rows = {a, b, {}, c};
  check(p, "decode_batch");
}

TEST(AttentionTiled, SlidingWindowAndSoftcap) {
  Problem p = sequence(40, 45, 16, 4);
  p.softcap = 5.0f;
  p.n_head = 2;
  p.n_head_kv = 2;
  p.head_dim = 16;
  check(p, "swa16_softcap");
  Problem one = sequence(0, 20, 1, 5);  // a window of one cell: each row sees itself
  check(one, "swa1");
  Problem q8 = sequence(33, 19, 24, 6);  // head size 32: the Q8_0 cache too
  q8.softcap = 5.0f;
  q8.n_head = 3;
  q8.n_head_kv = 1;
  check(q8, "swa24_softcap_hd32");
}

// gpt-oss's sinks: one logit per head in the denominator only. Prefill,
// decode split over threads (the sink folds in after the splits merge), a
// window, and sinks above every score (the output shrinks towards zero).
TEST(AttentionTiled, SinksJoinTheDenominator) {
  Problem p = sequence(20, 30, 8, 9);
  p.sinks = {-1.0f, 0.5f, 2.0f, 30.0f};
  check(p, "sinks_swa8");
  Problem dec = sequence(700, 1, 0, 10);
  dec.n_head = 8;
  dec.n_head_kv = 2;
  dec.sinks = {0.0f, 1.0f, -3.0f, 4.0f, 2.0f, -0.5f, 6.0f, 40.0f};
  check(dec, "sinks_decode_depth700");

  // In float64: out_h = sum_j e^s_j v_j / (sum_j e^s_j + e^sink_h) for one row.
  const Data d = make_data(p, 7);
  const auto got = tiled(p, d, KvType::F32, 2, detected_cpu_level());
  const std::size_t t = 5;
  const std::int32_t hd = p.head_dim, rep = p.n_head / p.n_head_kv;
  double worst = 0;
  for (std::int32_t h = 0; h < p.n_head; ++h) {
    std::vector<double> num(hd, 0.0);
    double den = std::exp(static_cast<double>(p.sinks[h]));
    for (std::uint32_t c : p.rows[t]) {
      double sc = 0;
      for (std::int32_t i = 0; i < hd; ++i)
        sc += double{d.q[(t * p.n_head + h) * hd + i]} * d.k[(c * p.n_head_kv + h / rep) * hd + i];
      const double e = std::exp(sc / std::sqrt(static_cast<double>(hd)));
      den += e;
      for (std::int32_t i = 0; i < hd; ++i) num[i] += e * d.v[(c * p.n_head_kv + h / rep) * hd + i];
    }
    for (std::int32_t i = 0; i < hd; ++i)
      worst = std::max(worst, std::abs(num[i] / den - got[(t * p.n_head + h) * hd + i]));
  }
  EXPECT_LT(worst, 1e-5);  // |v| <= ~5, a few hundred roundings of 2^-24 each
  // Head 3's sink (30) outweighs its 8 scores (|s| < ~15) by e^15: its output is ~0.
  for (std::int32_t i = 0; i < hd; ++i) EXPECT_LT(std::abs(got[(t * p.n_head + 3) * hd + i]), 1e-5);
}

TEST(AttentionTiled, Q8CacheRefusesHeadSizesNotMultipleOf32) {
  Problem p = sequence(3, 2, 0, 1);
  p.head_dim = 40;
  const Data d = make_data(p, 1);
  std::vector<std::byte> blocks(1024);
  std::vector<float> out(2 * p.n_head * p.head_dim);
  AttentionArgs a = args(p, d, KvType::F32, out.data());
  a.kv_type = KvType::Q8_0;
  a.k = a.v = blocks.data();
  ThreadPool pool(1);
  AttentionScratch scratch;
  EXPECT_THROW(attention_tiled(a, pool, scratch), Error);
}

TEST(AttentionTiled, SeveralSequencesSharedCellsAndEmptyRows) {
  Problem p;
  p.n_cells = 64;
  p.head_dim = 8;
  // seq 0 holds cells 0..9; seq 1 forked from it at 6 and holds 20..24 after;
  // rows of both interleave, one row sees nothing, one sees cells out of order.
  std::vector<std::uint32_t> s0, s1;
  for (std::uint32_t c = 0; c < 10; ++c) s0.push_back(c);
  for (std::uint32_t c = 0; c < 6; ++c) s1.push_back(c);
  for (std::uint32_t c = 20; c < 25; ++c) s1.push_back(c);
  p.rows = {s0, s1,   {}, std::vector<std::uint32_t>(s0.begin(), s0.begin() + 3), {30, 2, 31, 1},
            s1, {40}, {}};
  check(p, "mixed_sequences");
}

TEST(AttentionTiled, RowsSeeingNothingGiveZeros) {
  Problem p;
  p.n_cells = 4;
  p.rows = {{}, {}};
  p.sinks = {1.0f, 2.0f, 3.0f, 4.0f};  // a sink alone takes no value: still zeros
  const Data d = make_data(p, 1);
  for (int threads : {1, 3}) {
    for (int lv = 0; lv <= static_cast<int>(detected_cpu_level()); ++lv) {
      const auto got = tiled(p, d, KvType::F16, threads, static_cast<CpuLevel>(lv));
      for (float x : got) EXPECT_EQ(x, 0.0f);
    }
  }
}

// Row r of p as a call of its own: the same query and cells, nothing beside it.
std::vector<float> row_alone(const Problem& p, const Data& d, std::size_t r, KvType type,
                             int threads, CpuLevel level) {
  Problem one = p;
  one.rows = {p.rows[r]};
  Data dr = d;
  const std::size_t width = static_cast<std::size_t>(p.n_head) * p.head_dim;
  dr.q.assign(d.q.begin() + r * width, d.q.begin() + (r + 1) * width);
  dr.cells = p.rows[r];
  dr.begin = {0};
  dr.end = {static_cast<std::uint32_t>(p.rows[r].size())};
  return tiled(one, dr, type, threads, level);
}

// Batch invariance (attention.h): a row's output is the same bits alone and
// beside other rows, with any thread count. This is one computation claimed
// to be reproducible, not two formulas compared, hence exact equality: the
// decode path (a row alone) and the tile path (rows of a prefill) add in the
// same order, and a row's segments fold the same way whoever computed them.
// Rows: a prefill of one sequence crossing three segments and two tiles (the tile path),
// decodes of two other sequences, sliding-window rows (tiles of one row).
TEST(AttentionTiled, ARowGivesTheSameBitsAloneAndInAnyBatch) {
  struct Shape {
    std::int32_t n_head, n_head_kv, hd;
    float softcap;
  };
  // Query heads per kv head 1 to 5 (the tile path takes them 4 at a time, then
  // what is left), head sizes of 64-column blocks, 16-column tails and both.
  for (const Shape& sh : {Shape{6, 2, 64, 0.0f}, Shape{4, 4, 20, 0.0f}, Shape{8, 2, 40, 3.0f},
                          Shape{3, 1, 32, 0.0f}, Shape{10, 2, 80, 0.0f}}) {
    Problem p;
    p.n_head = sh.n_head;
    p.n_head_kv = sh.n_head_kv;
    p.head_dim = sh.hd;
    p.softcap = sh.softcap;
    // Seq a's rows cross three segments, b's two: a in the even cells, b in
    // the odd ones, then the window's cells and a's prefill past one tile of rows.
    constexpr auto S = static_cast<std::uint32_t>(kAttnSegment);
    constexpr std::uint32_t kCachedA = 2 * S + 88, kCachedB = S + 44, kWindowAt = 2 * kCachedA + 8;
    constexpr std::uint32_t kPrefillAt = kWindowAt + 100, kPrefill = kAttnTileRows + 4;
    p.n_cells = kPrefillAt + kPrefill;
    std::vector<std::uint32_t> a, b, c;
    for (std::uint32_t x = 0; x < kCachedA; ++x) a.push_back(2 * x);
    for (std::uint32_t x = 0; x < kCachedB; ++x) b.push_back(2 * x + 1);
    for (std::uint32_t x = kWindowAt; x < kWindowAt + 90; ++x) c.push_back(x);
    for (std::uint32_t t = 0; t < kPrefill; ++t) {
      a.push_back(kPrefillAt + t);
      p.rows.push_back(a);
    }
    p.rows.push_back(b);
    b.push_back(2 * kCachedB + 1);
    p.rows.push_back(b);
    for (std::uint32_t t = 0; t < 5; ++t)  // a window of 64 cells moving by one
      p.rows.emplace_back(c.begin() + t, c.begin() + 64 + t);
    const Data d = make_data(p, 11);
    const std::size_t width = static_cast<std::size_t>(p.n_head) * p.head_dim;
    std::vector<KvType> types = {KvType::F32, KvType::F16};
    if (p.head_dim % 32 == 0) types.push_back(KvType::Q8_0);
    for (int lv = 0; lv <= static_cast<int>(detected_cpu_level()); ++lv) {
      const auto level = static_cast<CpuLevel>(lv);
      for (KvType type : types) {
        const std::string what = "hd " + std::to_string(p.head_dim) + " " + cpu_level_name(level) +
                                 " type " + std::to_string(static_cast<int>(type));
        const auto batch = tiled(p, d, type, 2, level);
        for (int threads : {1, 3})
          EXPECT_EQ(tiled(p, d, type, threads, level), batch) << what << " threads " << threads;
        for (std::size_t r = 0; r < p.rows.size(); ++r) {
          const std::vector<float> want(batch.begin() + r * width, batch.begin() + (r + 1) * width);
          for (int threads : {1, 4})
            EXPECT_EQ(row_alone(p, d, r, type, threads, level), want)
                << what << " row " << r << " threads " << threads;
        }
      }
    }
  }
}

// The mask as the KV cache builds it: a sequence's cells listed once, each
// row a slice of that list (AttentionMask), against every row listing its own
// cells. The rows see the same cells in the same order, so the same bits: a
// prefill at depth (rows extending one list) and sliding-window rows (slices
// moving along it).
TEST(AttentionTiled, RowsSlicingOneListGiveTheSameBitsAsListsOfTheirOwn) {
  for (std::uint32_t window : {0u, 16u}) {
    const Problem p = sequence(150, 40, window, 4);
    const Data own = make_data(p, 12);
    // The sequence's list: the first row's cells, then each later row's newest.
    Data shared = own;
    shared.cells = p.rows[0];
    for (std::size_t r = 1; r < p.rows.size(); ++r) shared.cells.push_back(p.rows[r].back());
    shared.begin.clear();
    shared.end.clear();
    for (const auto& row : p.rows) {
      const auto at = std::find(shared.cells.begin(), shared.cells.end(), row[0]);
      const auto b = static_cast<std::uint32_t>(at - shared.cells.begin());
      shared.begin.push_back(b);
      shared.end.push_back(b + static_cast<std::uint32_t>(row.size()));
      ASSERT_TRUE(std::equal(row.begin(), row.end(), at)) << "row " << shared.begin.size() - 1;
    }
    ASSERT_LT(shared.cells.size(), own.cells.size() / 10);
    for (int lv = 0; lv <= static_cast<int>(detected_cpu_level()); ++lv) {
      const auto level = static_cast<CpuLevel>(lv);
      for (KvType type : {KvType::F32, KvType::F16, KvType::Q8_0}) {
        for (int threads : {1, 3}) {
          EXPECT_EQ(tiled(p, shared, type, threads, level), tiled(p, own, type, threads, level))
              << "window " << window << " " << cpu_level_name(level) << " type "
              << static_cast<int>(type) << " threads " << threads;
        }
      }
    }
  }
}

TEST(HalfRows, ConvertLikeTheScalarHalfFunctions) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> ud(-70000.0f, 70000.0f);
  std::vector<float> x(37);
  for (float& v : x) v = ud(rng) * (rng() % 2 ? 1.0f : 1e-6f);
  x[0] = 0.0f;
  x[1] = -0.0f;
  x[2] = 1e-8f;  // F16 subnormal range
  std::vector<std::uint16_t> h(x.size());
  std::vector<float> back(x.size());
  ops::f32_to_f16_row(x.data(), h.data(), static_cast<std::int64_t>(x.size()));
  ops::f16_to_f32_row(h.data(), back.data(), static_cast<std::int64_t>(x.size()));
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(h[i], f32_to_fp16(x[i])) << i;  // bit patterns, not floats computed two ways
    EXPECT_EQ(std::bit_cast<std::uint32_t>(back[i]),
              std::bit_cast<std::uint32_t>(fp16_to_f32(h[i])))
        << i;
  }
}

}  // namespace
}  // namespace seam
