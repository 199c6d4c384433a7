// The session invariants on a gated-delta-net hybrid (qwen35: recurrent layers
// 0-2, attention layer 3, random weights from tools/reference.py): batched ==
// alone, fork == recompute, clear_seq frees everything, begin_prompt reuse ==
// cold prefill with and without a usable snapshot, and a refused batch changes
// neither the KV cache nor the recurrent state.
#include <gtest/gtest.h>

#include <random>

#include "python_tools.h"
#include "seam/error.h"
#include "test_model.h"

namespace seam {
namespace {

using namespace seam::testing;

constexpr double kTol = 1e-5;

std::shared_ptr<const Model> hybrid() {
  static const std::string path =
      generate_model("hybrid_session_qwen35", "--arch qwen35 --seed 31");
  return load_two_threads(path);
}

std::vector<Token> tokens(std::mt19937& rng, std::size_t n) {
  std::uniform_int_distribution<Token> d(3, 250);
  std::vector<Token> t(n);
  for (auto& x : t) x = d(rng);
  return t;
}

std::vector<std::vector<float>> cold(const Model& m, const std::vector<Token>& ids) {
  auto s = m.session(exact_config(128, 512));
  return decode_all(*s, ids, 0);
}

void expect_rows(const std::vector<std::vector<float>>& got,
                 const std::vector<std::vector<float>>& want, std::size_t offset,
                 const std::string& what) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_LT(rel_diff(got[i], want[offset + i]), kTol) << what << " row " << i;
  }
}

TEST(HybridSession, BatchedEqualsAlone) {
  auto m = hybrid();
  std::mt19937 rng(1);
  const std::vector<std::size_t> lengths = {1, 7, 12, 4};
  std::vector<std::vector<Token>> seqs;
  for (std::size_t n : lengths) seqs.push_back(tokens(rng, n + 2));
  auto s = m->session(exact_config(128, 8, 4));  // n_batch 8 splits the mixed prefill
  std::vector<Decode> batch;
  std::vector<std::size_t> seq_of;
  for (std::size_t k = 0; k < 12; ++k) {
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      if (k < lengths[i]) {
        batch.push_back({seqs[i][k], std::int32_t(k), std::uint32_t(i), true});
        seq_of.push_back(i);
      }
    }
  }
  s->decode(batch);
  std::vector<std::vector<std::vector<float>>> got(seqs.size());
  for (std::size_t r = 0; r < batch.size(); ++r) {
    auto l = s->logits(r);
    got[seq_of[r]].emplace_back(l.begin(), l.end());
  }
  for (std::size_t j = 0; j < 2; ++j) {
    std::vector<Decode> step;
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      step.push_back(
          {seqs[i][lengths[i] + j], std::int32_t(lengths[i] + j), std::uint32_t(i), true});
    }
    s->decode(step);
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      auto l = s->logits(i);
      got[i].emplace_back(l.begin(), l.end());
    }
  }
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    expect_rows(got[i], cold(*m, seqs[i]), 0, "seq " + std::to_string(i));
  }
}

TEST(HybridSession, ForkEqualsRecompute) {
  auto m = hybrid();
  std::mt19937 rng(2);
  const auto prefix = tokens(rng, 9), ta = tokens(rng, 4), tb = tokens(rng, 3);
  auto s = m->session(exact_config(128, 512, 2));
  decode_all(*s, prefix, 0);
  s->copy_seq(0, 1);
  const auto ga = decode_all(*s, ta, 0, 9);
  const auto gb = decode_all(*s, tb, 1, 9);
  std::vector<Token> fa = prefix, fb = prefix;
  fa.insert(fa.end(), ta.begin(), ta.end());
  fb.insert(fb.end(), tb.begin(), tb.end());
  expect_rows(ga, cold(*m, fa), 9, "parent");
  expect_rows(gb, cold(*m, fb), 9, "fork");
}

TEST(HybridSession, ClearSeqFreesEverything) {
  auto m = hybrid();
  std::mt19937 rng(3);
  const auto a = tokens(rng, 10), b = tokens(rng, 6);
  auto s = m->session(exact_config(64, 512, 2));
  decode_all(*s, a, 0);
  decode_all(*s, b, 1);
  s->clear_seq(0);
  s->clear_seq(1);
  EXPECT_EQ(s->free_cells(), 64u);
  EXPECT_EQ(s->seq_next_pos(0), 0);
  // The recurrent state is zeroed too: seq 1 now behaves as a new sequence.
  expect_rows(decode_all(*s, a, 1), cold(*m, a), 0, "after clear");
}

void check_reuse(const std::vector<std::vector<Token>>& history, const std::vector<Token>& prompt,
                 std::size_t want, const std::string& what) {
  auto m = hybrid();
  auto s = m->session(exact_config(128, 512));
  std::int32_t pos = 0;
  for (const auto& call : history) {
    decode_all(*s, call, 0, pos);
    pos += std::int32_t(call.size());
  }
  const std::size_t n = s->begin_prompt(0, prompt);
  EXPECT_EQ(n, want) << what;
  EXPECT_EQ(s->seq_next_pos(0), std::int32_t(n)) << what;
  const auto warm = decode_all(*s, std::span(prompt).subspan(n), 0, std::int32_t(n));
  expect_rows(warm, cold(*m, prompt), n, what);
}

TEST(HybridSession, PrefixReuseEqualsColdPrefill) {
  std::mt19937 rng(4);
  const auto p = tokens(rng, 10), more = tokens(rng, 4);
  std::vector<Token> ext = p;
  ext.insert(ext.end(), more.begin(), more.end());
  // The same prompt again: the snapshot one token before the prefill's end.
  check_reuse({p}, p, 9, "identical prompt");
  // An extension: the live state.
  check_reuse({p}, ext, 10, "extension");
  // Generated one token at a time after the prompt: the prompt's end is kept,
  // not each token's (a copy of the whole state per token), so a prompt that
  // diverges after 12 tokens restarts from 10.
  std::vector<std::vector<Token>> steps = {p};
  for (Token t : more) steps.push_back({t});
  std::vector<Token> div(ext.begin(), ext.begin() + 12);
  div.push_back(ext[12] == 100 ? 101 : 100);
  check_reuse(steps, div, 10, "the prompt's end below the divergence");
  // The next call of several tokens (a new turn) keeps where generation
  // stopped, 14: a prompt that diverges inside that call restarts there.
  const std::vector<Token> turn = {5, 6, 7};
  steps.push_back(turn);
  std::vector<Token> div_turn = ext;
  div_turn.push_back(turn[0]);
  div_turn.push_back(turn[1] == 100 ? 101 : 100);
  check_reuse(steps, div_turn, 14, "the end of generation");
  // No snapshot at or below the divergence: a full prefill.
  std::vector<Token> early(p.begin(), p.begin() + 5);
  early.push_back(p[5] == 100 ? 101 : 100);
  check_reuse({p, more}, early, 0, "no usable snapshot");
}

TEST(HybridSession, RefusedBatchChangesNeitherStore) {
  auto m = hybrid();
  std::mt19937 rng(5);
  const auto a = tokens(rng, 8), next = tokens(rng, 2);
  auto s = m->session(exact_config(10, 512));
  decode_all(*s, a, 0);
  // A gap (the recurrent state folds every position), a bad token, too many cells.
  EXPECT_THROW(s->decode(std::vector<Decode>{{next[0], 9, 0, true}}), Error);
  EXPECT_THROW(s->decode(std::vector<Decode>{{next[0], 8, 0, true}, {-1, 9, 0, true}}), Error);
  EXPECT_THROW(s->decode(std::vector<Decode>{{1, 8, 0, true}, {1, 9, 0, true}, {1, 10, 0, true}}),
               Error);
  EXPECT_FALSE(s->corrupted());
  EXPECT_EQ(s->free_cells(), 2u);
  std::vector<Token> all = a;
  all.insert(all.end(), next.begin(), next.end());
  expect_rows(decode_all(*s, next, 0, 8), cold(*m, all), 8, "after refusals");
}

}  // namespace
}  // namespace seam
