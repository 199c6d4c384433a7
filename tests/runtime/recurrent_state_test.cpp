// The recurrent-state store and the Session operations that span it and the
// KV cache (runtime/seq_stores.h), driven by a test-only hybrid "model": one
// KV layer plus two recurrent layers built from the real backend ops (causal
// conv, L2 norm, gated delta rule), fed from a deterministic function of the
// token. Whatever the forward pass of a real hybrid model adds on top, these
// are the invariants its session must keep: batched == alone, fork ==
// recompute, clear frees everything, prefix reuse == cold prefill (with and
// without a usable snapshot), and a refused batch changes neither store.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <vector>

#include "compute/backend.h"
#include "runtime/seq_stores.h"
#include "seam/error.h"

namespace seam {
namespace {

constexpr std::int32_t kHeads = 2, kDim = 4, kWidth = 4;
constexpr std::int64_t kQkv = kHeads * kDim;  // floats of each of q, k, v
constexpr std::int64_t kChannels = 3 * kQkv;  // conv channels: [q | k | v]
constexpr std::uint32_t kLayers = 2, kVocab = 50;
constexpr double kTol = 1e-5;

RecurrentShape fake_shape() {
  return {kLayers, static_cast<std::size_t>((kWidth - 1) * kChannels),
          static_cast<std::size_t>(kHeads * kDim * kDim)};
}

// Outputs of the last recurrent layer, one row per batch row.
using Rows = std::vector<std::vector<float>>;

class FakeHybrid {
 public:
  FakeHybrid(std::uint32_t n_ctx, std::uint32_t n_seq)
      : stores_(KvCache(n_ctx, n_seq, 1, 4, KvType::F32), RecurrentStore(n_seq, fake_shape())),
        be_(1) {
    std::mt19937 rng(11);
    std::normal_distribution<float> d(0.0f, 0.5f);
    for (auto& w : conv_w_) {
      w.resize(kChannels * kWidth);
      for (auto& x : w) x = d(rng);
    }
  }
  SeqStores& stores() { return stores_; }
  // Called after every fold of a recurrent layer.
  void on_fold(std::function<void()> f) { on_fold_ = std::move(f); }

  // Session::decode's order: validate (refuse before any change), allocate
  // cells, then the layers, each recurrent one through the store's protocol.
  Rows decode(std::span<const Decode> batch) {
    stores_.validate(batch, kVocab);
    std::vector<std::uint32_t> cells;
    stores_.kv().allocate(batch, cells);
    const std::vector<SeqRun> runs = seq_runs(batch);
    RecurrentStore& rec = stores_.rec();
    rec.begin_batch(runs);
    Rows prev(batch.size(), std::vector<float>(kQkv, 0.0f)), out = prev;
    for (std::uint32_t l = 0; l < kLayers; ++l) {
      rec.fold_layer(runs, l, [&](const SeqRun& run, std::size_t first, std::size_t n) {
        fold(batch, run, first, n, l, prev, out);
        if (on_fold_) on_fold_();
      });
      prev = out;
    }
    rec.commit_batch(runs);
    return out;
  }

  Rows decode_seq(std::uint32_t seq, std::span<const Token> tokens, std::int32_t pos0) {
    std::vector<Decode> b;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      b.push_back({tokens[i], pos0 + static_cast<std::int32_t>(i), seq, true});
    }
    return decode(b);
  }

 private:
  void fold(std::span<const Decode> batch, const SeqRun& run, std::size_t first, std::size_t n,
            std::uint32_t l, const Rows& prev, Rows& out) {
    const auto T = static_cast<std::int64_t>(n);
    std::vector<float> x(T * kChannels), u(T * kChannels), q(T * kQkv), k(T * kQkv), v(T * kQkv),
        g(T * kHeads), beta(T * kHeads), o(T * kQkv);
    for (std::int64_t t = 0; t < T; ++t) {
      const std::uint32_t row = run.rows[first + t];
      const double tok = batch[row].token;
      for (std::int64_t c = 0; c < kChannels; ++c) {
        x[t * kChannels + c] = static_cast<float>(std::sin(0.37 * tok * (c + 1) + 1.3 * l) +
                                                  0.5 * prev[row][c % kQkv]);
      }
      for (std::int32_t h = 0; h < kHeads; ++h) {
        g[t * kHeads + h] = static_cast<float>(-0.3 * (1.0 + std::cos(tok + h)));
        beta[t * kHeads + h] = static_cast<float>(0.5 + 0.4 * std::sin(tok * (h + 1)));
      }
    }
    be_.ssm_conv(x.data(), T, kChannels, conv_w_[l].data(), kWidth, stores_.rec().conv(l, run.seq),
                 u.data());
    be_.silu(u.data(), T * kChannels, u.data());
    for (std::int64_t t = 0; t < T; ++t) {
      std::copy_n(&u[t * kChannels], kQkv, &q[t * kQkv]);
      std::copy_n(&u[t * kChannels + kQkv], kQkv, &k[t * kQkv]);
      std::copy_n(&u[t * kChannels + 2 * kQkv], kQkv, &v[t * kQkv]);
    }
    be_.l2_norm(q.data(), T * kHeads, kDim, 1e-6f, q.data());
    be_.l2_norm(k.data(), T * kHeads, kDim, 1e-6f, k.data());
    GatedDeltaArgs a;
    a.q = q.data();
    a.k = k.data();
    a.v = v.data();
    a.g = g.data();
    a.beta = beta.data();
    a.state = stores_.rec().state(l, run.seq);
    a.out = o.data();
    a.n_tokens = T;
    a.n_head_k = a.n_head_v = kHeads;
    a.dk = a.dv = kDim;
    be_.gated_delta_rule(a);
    for (std::int64_t t = 0; t < T; ++t) {
      out[run.rows[first + t]].assign(&o[t * kQkv], &o[t * kQkv] + kQkv);
    }
  }

  SeqStores stores_;
  CpuBackend be_;
  std::vector<float> conv_w_[kLayers];
  std::function<void()> on_fold_;
};

double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num = std::max(num, std::abs(double(a[i]) - b[i]));
    den = std::max(den, std::abs(double(b[i])));
  }
  return num / std::max(den, 1e-30);
}

void expect_rows_equal(const Rows& got, const Rows& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_LT(rel_diff(got[i], want[i]), kTol) << what << " row " << i;
  }
}

std::vector<Token> tokens(std::mt19937& rng, std::size_t n) {
  std::uniform_int_distribution<Token> d(0, kVocab - 1);
  std::vector<Token> t(n);
  for (auto& x : t) x = d(rng);
  return t;
}

// Cold: a fresh store, the whole sequence in one call.
Rows cold(std::span<const Token> seq) {
  FakeHybrid m(64, 1);
  return m.decode_seq(0, seq, 0);
}

TEST(RecurrentSession, TheFakeLayerCarriesState) {
  // Guards the tests below against a layer whose output ignores history:
  // the same last token after different prefixes gives different outputs.
  const std::vector<Token> a = {1, 2, 3, 9}, b = {4, 5, 6, 9};
  EXPECT_GT(rel_diff(cold(a).back(), cold(b).back()), 1e-3);
}

TEST(RecurrentSession, BatchedEqualsAlone) {
  std::mt19937 rng(1);
  const std::vector<std::size_t> lengths = {1, 6, 11, 3};
  std::vector<std::vector<Token>> seqs;
  for (std::size_t n : lengths) seqs.push_back(tokens(rng, n + 3));
  FakeHybrid m(128, static_cast<std::uint32_t>(lengths.size()));
  // Prompts interleaved in one batch, then three steps of every sequence together.
  std::vector<Decode> batch;
  for (std::size_t k = 0; k < 11; ++k) {
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      if (k < lengths[i]) batch.push_back({seqs[i][k], std::int32_t(k), std::uint32_t(i), true});
    }
  }
  std::map<std::uint32_t, Rows> got;
  const Rows first = m.decode(batch);
  for (std::size_t r = 0; r < batch.size(); ++r) got[batch[r].seq].push_back(first[r]);
  for (std::size_t j = 0; j < 3; ++j) {
    std::vector<Decode> step;
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      step.push_back(
          {seqs[i][lengths[i] + j], std::int32_t(lengths[i] + j), std::uint32_t(i), true});
    }
    const Rows rows = m.decode(step);
    for (std::size_t r = 0; r < step.size(); ++r) got[step[r].seq].push_back(rows[r]);
  }
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    expect_rows_equal(got[std::uint32_t(i)], cold(seqs[i]), "seq " + std::to_string(i));
  }
}

TEST(RecurrentSession, ForkEqualsRecompute) {
  std::mt19937 rng(2);
  const auto prefix = tokens(rng, 7), tail0 = tokens(rng, 4), tail1 = tokens(rng, 5);
  FakeHybrid m(128, 2);
  m.decode_seq(0, prefix, 0);
  m.stores().copy_seq(0, 1);
  EXPECT_EQ(m.stores().rec().seq_pos(1), 7);
  EXPECT_EQ(m.stores().rec().snapshot_positions(1), m.stores().rec().snapshot_positions(0));
  // Both continue, interleaved: neither may see the other's tokens.
  const Rows r0 = m.decode_seq(0, tail0, 7);
  const Rows r1 = m.decode_seq(1, tail1, 7);
  std::vector<Token> full0 = prefix, full1 = prefix;
  full0.insert(full0.end(), tail0.begin(), tail0.end());
  full1.insert(full1.end(), tail1.begin(), tail1.end());
  const Rows c0 = cold(full0), c1 = cold(full1);
  expect_rows_equal(r0, Rows(c0.begin() + 7, c0.end()), "parent");
  expect_rows_equal(r1, Rows(c1.begin() + 7, c1.end()), "fork");
}

TEST(RecurrentSession, ClearSeqFreesEverything) {
  std::mt19937 rng(3);
  const auto a = tokens(rng, 9), b = tokens(rng, 5);
  FakeHybrid m(32, 2);
  m.decode_seq(0, a, 0);
  m.decode_seq(1, b, 0);
  m.stores().clear_seq(0);
  m.stores().clear_seq(1);
  SeqStores& s = m.stores();
  EXPECT_EQ(s.kv().free_cells(), 32u);
  for (std::uint32_t seq : {0u, 1u}) {
    EXPECT_EQ(s.rec().seq_pos(seq), 0);
    EXPECT_TRUE(s.rec().snapshot_positions(seq).empty());
    for (std::uint32_t l = 0; l < kLayers; ++l) {
      const float* c = s.rec().conv(l, seq);
      const float* st = s.rec().state(l, seq);
      EXPECT_TRUE(std::all_of(c, c + fake_shape().conv_floats, [](float x) { return x == 0; }));
      EXPECT_TRUE(std::all_of(st, st + fake_shape().state_floats, [](float x) { return x == 0; }));
    }
  }
  // The cleared sequence starts over at position 0 like a new one.
  expect_rows_equal(m.decode_seq(1, a, 0), cold(a), "after clear");
}

// begin_prompt, then decode the rest: the rows must equal a cold prefill's.
void expect_reuse_equals_cold(FakeHybrid& m, const std::vector<Token>& prompt,
                              std::size_t want_kept, const std::string& what) {
  const std::size_t n = m.stores().begin_prompt(0, prompt);
  EXPECT_EQ(n, want_kept) << what;
  EXPECT_EQ(m.stores().kv().seq_next_pos(0), std::int32_t(n)) << what;
  EXPECT_EQ(m.stores().rec().seq_pos(0), std::int32_t(n)) << what;
  const Rows rows = m.decode_seq(0, std::span(prompt).subspan(n), std::int32_t(n));
  const Rows c = cold(prompt);
  expect_rows_equal(rows, Rows(c.begin() + std::ptrdiff_t(n), c.end()), what);
}

TEST(RecurrentSession, PrefixReuseEqualsColdPrefill) {
  std::mt19937 rng(4);
  const auto p = tokens(rng, 8), more = tokens(rng, 3);
  std::vector<Token> ext = p;
  ext.insert(ext.end(), more.begin(), more.end());
  {
    // The same prompt again: the snapshot one token before the end of the call.
    FakeHybrid m(64, 1);
    m.decode_seq(0, p, 0);
    EXPECT_EQ(m.stores().rec().snapshot_positions(0), std::vector<std::int32_t>{7});
    expect_reuse_equals_cold(m, p, 7, "identical prompt");
  }
  {
    // An extension: the live state covers the whole cached sequence.
    FakeHybrid m(64, 1);
    m.decode_seq(0, p, 0);
    expect_reuse_equals_cold(m, ext, 8, "extension");
  }
  {
    // Token-by-token decoding after a prompt keeps the prompt's end (8), not
    // each token's; a prompt that diverges after 9 tokens falls back to it.
    FakeHybrid m(64, 1);
    m.decode_seq(0, p, 0);
    for (std::size_t i = 0; i < more.size(); ++i) {
      m.decode_seq(0, std::span(&more[i], 1), std::int32_t(8 + i));
    }
    EXPECT_EQ(m.stores().rec().snapshot_positions(0), (std::vector<std::int32_t>{7, 8}));
    std::vector<Token> diverge(ext.begin(), ext.begin() + 9);
    diverge.push_back((ext[9] + 1) % kVocab);
    diverge.push_back(3);
    expect_reuse_equals_cold(m, diverge, 8, "the prompt's end below the divergence");
  }
  {
    // A call of several tokens after token-by-token decoding keeps where the
    // single tokens stopped (11), and its own last-but-one position (12).
    FakeHybrid m(64, 1);
    m.decode_seq(0, p, 0);
    for (std::size_t i = 0; i < more.size(); ++i) {
      m.decode_seq(0, std::span(&more[i], 1), std::int32_t(8 + i));
    }
    const std::vector<Token> turn = {1, 2};
    m.decode_seq(0, turn, 11);
    EXPECT_EQ(m.stores().rec().snapshot_positions(0), (std::vector<std::int32_t>{7, 8, 11, 12}));
    std::vector<Token> diverge = ext;
    diverge.push_back((turn[0] + 1) % kVocab);
    expect_reuse_equals_cold(m, diverge, 11, "the end of the single tokens");
  }
  {
    // Diverging where no snapshot exists: the longest one below is used.
    FakeHybrid m(64, 1);
    m.decode_seq(0, p, 0);
    m.decode_seq(0, more, 8);  // snapshots 7 (first call), 8 (its end), 10 (one before)
    std::vector<Token> diverge(ext.begin(), ext.begin() + 6);
    diverge.push_back((ext[6] + 1) % kVocab);
    expect_reuse_equals_cold(m, diverge, 0, "no snapshot at or below 6");
    m.stores().clear_seq(0);
    m.decode_seq(0, p, 0);
    m.decode_seq(0, more, 8);
    std::vector<Token> d9(ext.begin(), ext.begin() + 9);
    d9.push_back((ext[9] + 1) % kVocab);
    expect_reuse_equals_cold(m, d9, 8, "longest snapshot below the divergence");
  }
}

TEST(RecurrentSession, SnapshotRingKeepsTheLongestPrefixes) {
  std::mt19937 rng(5);
  const auto t = tokens(rng, 12);
  FakeHybrid m(64, 1);
  for (std::size_t i = 0; i < t.size(); i += 2)
    m.decode_seq(0, std::span(&t[i], 2), std::int32_t(i));
  // Calls of two tokens end at 2, 4, .., 12; each keeps its start (the
  // previous end) and its last-but-one position, so snapshots are 1..11 (the
  // live state is 12): the ring keeps the longest four.
  EXPECT_EQ(m.stores().rec().snapshot_positions(0), (std::vector<std::int32_t>{8, 9, 10, 11}));
}

TEST(RecurrentSession, AFullRingHoldsNoCopyBeyondItsSlots) {
  // The state one token before a call's end is staged mid-call and becomes a
  // snapshot at commit; in a full ring it must take the place of the one it
  // replaces, during the call as after it, or every prompt would keep one
  // whole-model state copy more than live + kSnapshotsPerSeq.
  std::mt19937 rng(7);
  const auto t = tokens(rng, 30);
  FakeHybrid m(64, 2);
  const std::size_t per_seq =
      fake_shape().n_layer * (fake_shape().conv_floats + fake_shape().state_floats);
  // Sequence 0's live state and ring, and sequence 1's live state.
  const std::size_t bound = (2 + RecurrentStore::kSnapshotsPerSeq) * per_seq;
  std::size_t peak = 0;
  m.on_fold([&] { peak = std::max(peak, m.stores().rec().resident_floats()); });
  for (std::size_t i = 0; i < t.size(); i += 3)
    m.decode_seq(0, std::span(&t[i], 3), std::int32_t(i));
  // Calls end at 3, 6, .., 30 and keep their start and their last-but-one
  // position: the ring keeps the longest four.
  EXPECT_EQ(m.stores().rec().snapshot_positions(0), (std::vector<std::int32_t>{24, 26, 27, 29}));
  EXPECT_LE(peak, bound);
  EXPECT_LE(m.stores().rec().resident_floats(), bound);
  // The moved buffers hold the states they name: a prompt that diverges after
  // 27 tokens resumes from that snapshot and matches a cold prefill.
  std::vector<Token> diverging(t.begin(), t.begin() + 27);
  for (Token x : tokens(rng, 3)) diverging.push_back(x);
  expect_reuse_equals_cold(m, diverging, 27, "diverging after 27");
  EXPECT_LE(peak, bound);
}

TEST(RecurrentSession, RefusedBatchChangesNeitherStore) {
  std::mt19937 rng(6);
  FakeHybrid m(12, 2);
  m.decode_seq(0, tokens(rng, 5), 0);
  m.decode_seq(1, tokens(rng, 3), 0);
  SeqStores& s = m.stores();
  const auto capture = [&] {
    std::vector<float> all;
    for (std::uint32_t seq : {0u, 1u}) {
      for (std::uint32_t l = 0; l < kLayers; ++l) {
        all.insert(all.end(), s.rec().conv(l, seq),
                   s.rec().conv(l, seq) + fake_shape().conv_floats);
        all.insert(all.end(), s.rec().state(l, seq),
                   s.rec().state(l, seq) + fake_shape().state_floats);
      }
      all.push_back(float(s.rec().seq_pos(seq)));
      all.push_back(float(s.kv().seq_length(seq)));
      for (std::int32_t p : s.rec().snapshot_positions(seq)) all.push_back(float(p));
    }
    all.push_back(float(s.kv().free_cells()));
    return all;
  };
  const std::vector<float> before = capture();
  const std::vector<std::vector<Decode>> refused = {
      {{1, 5, 0, true}, {2, 7, 0, true}},       // a gap: recurrent layers fold every position
      {{1, 6, 0, true}},                        // a gap at the start
      {{1, 5, 0, true}, {kVocab, 3, 1, true}},  // token outside the vocab
      {{1, 5, 0, true}, {1, 6, 0, true}, {1, 7, 0, true}, {1, 8, 0, true}, {1, 9, 0, true}},
  };  // the last needs 5 cells, 4 are free
  for (std::size_t i = 0; i < refused.size(); ++i) {
    EXPECT_THROW(m.decode(refused[i]), Error) << "batch " << i;
    EXPECT_EQ(capture(), before) << "batch " << i;
  }
  // And the session goes on as if nothing happened.
  EXPECT_NO_THROW(m.decode(std::vector<Decode>{{1, 5, 0, true}, {2, 3, 1, true}}));
}

}  // namespace
}  // namespace seam
