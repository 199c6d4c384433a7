// The invariants of the engine seam: batching, forking and prefix reuse give
// the same logits as computing each sequence alone from scratch.
#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "test_model.h"

namespace seam {
namespace {

using testing::decode_all;
using testing::exact_config;
using testing::rel_diff;
using testing::stories;

constexpr double kTol = 1e-5;

std::vector<Token> random_tokens(std::mt19937& rng, std::size_t n) {
  std::uniform_int_distribution<Token> d(3, 511);
  std::vector<Token> t(n);
  for (auto& x : t) x = d(rng);
  return t;
}

TEST(SessionInvariants, BatchedEqualsAlone) {
  auto model = stories();
  std::mt19937 rng(7);
  const std::vector<std::size_t> lengths = {1, 5, 13, 30, 8};
  std::vector<std::vector<Token>> prompts;
  for (std::size_t n : lengths) prompts.push_back(random_tokens(rng, n));
  std::vector<std::vector<Token>> continuations;
  for (std::size_t i = 0; i < lengths.size(); ++i) continuations.push_back(random_tokens(rng, 4));

  // Alone: each sequence in its own session, prompt then one token at a time.
  std::vector<std::vector<std::vector<float>>> alone(lengths.size());
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    auto s = model->session(exact_config(256, 512));
    alone[i] = decode_all(*s, prompts[i], 0);
    for (std::size_t j = 0; j < continuations[i].size(); ++j) {
      auto row = decode_all(*s, std::span(&continuations[i][j], 1), 0,
                            static_cast<std::int32_t>(prompts[i].size() + j));
      alone[i].push_back(row[0]);
    }
  }

  // Shared: all prompts in one mixed batch (split by a small n_batch), then
  // one decode step of all sequences together per continuation token.
  auto s = model->session(exact_config(256, 16, static_cast<std::uint32_t>(lengths.size())));
  std::vector<Decode> batch;
  std::vector<std::pair<std::size_t, std::size_t>> where;  // (seq, index)
  // Interleave sequences so each chunk mixes several of them.
  for (std::size_t k = 0; k < 30; ++k) {
    for (std::size_t i = 0; i < lengths.size(); ++i) {
      if (k < prompts[i].size()) {
        batch.push_back(
            {prompts[i][k], static_cast<std::int32_t>(k), static_cast<std::uint32_t>(i), true});
        where.emplace_back(i, k);
      }
    }
  }
  s->decode(batch);
  for (std::size_t r = 0; r < batch.size(); ++r) {
    auto [i, k] = where[r];
    EXPECT_LT(rel_diff(s->logits(r), alone[i][k]), kTol) << "seq " << i << " pos " << k;
  }
  for (std::size_t j = 0; j < 4; ++j) {
    std::vector<Decode> step;
    for (std::size_t i = 0; i < lengths.size(); ++i) {
      step.push_back({continuations[i][j], static_cast<std::int32_t>(prompts[i].size() + j),
                      static_cast<std::uint32_t>(i), true});
    }
    s->decode(step);
    for (std::size_t i = 0; i < lengths.size(); ++i) {
      EXPECT_LT(rel_diff(s->logits(i), alone[i][prompts[i].size() + j]), kTol) << i << " " << j;
    }
  }
}

TEST(SessionInvariants, ForkEqualsRecompute) {
  auto model = stories();
  std::mt19937 rng(11);
  const auto prefix = random_tokens(rng, 12);
  const auto tail_a = random_tokens(rng, 5);
  const auto tail_b = random_tokens(rng, 7);

  auto s = model->session(exact_config(128, 512, 2));
  decode_all(*s, prefix, 0);
  s->copy_seq(0, 1);
  EXPECT_EQ(s->seq_length(1), prefix.size());
  const std::uint32_t free_after_fork = s->free_cells();
  EXPECT_EQ(free_after_fork, 128 - prefix.size());  // the fork shares cells, copies nothing

  auto got_a = decode_all(*s, tail_a, 0, 12);
  auto got_b_head = decode_all(*s, std::span(tail_b).first(3), 1, 12);
  // Clearing the source after the fork leaves the fork intact.
  s->clear_seq(0);
  EXPECT_EQ(s->seq_length(0), 0u);
  EXPECT_EQ(s->seq_length(1), prefix.size() + 3);
  auto got_b_tail = decode_all(*s, std::span(tail_b).subspan(3), 1, 15);

  auto reference = [&](const std::vector<Token>& tail) {
    std::vector<Token> all = prefix;
    all.insert(all.end(), tail.begin(), tail.end());
    auto fresh = model->session(exact_config(128, 512));
    auto rows = decode_all(*fresh, all, 0);
    return std::vector<std::vector<float>>(rows.begin() + 12, rows.end());
  };
  auto ref_a = reference(tail_a);
  auto ref_b = reference(tail_b);
  for (std::size_t i = 0; i < tail_a.size(); ++i) EXPECT_LT(rel_diff(got_a[i], ref_a[i]), kTol);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_LT(rel_diff(got_b_head[i], ref_b[i]), kTol);
  for (std::size_t i = 3; i < tail_b.size(); ++i)
    EXPECT_LT(rel_diff(got_b_tail[i - 3], ref_b[i]), kTol);
}

// An embedder may keep only the session (as with a llama.cpp context): the
// session holds its model, so dropping the caller's pointer frees nothing it uses.
TEST(SessionInvariants, SessionOutlivesTheCallersModelPointer) {
  std::mt19937 rng(5);
  const auto tokens = random_tokens(rng, 9);
  const auto expected = decode_all(*stories()->session(exact_config(64, 512)), tokens, 0);

  std::unique_ptr<Session> s;
  std::weak_ptr<const Model> watch;
  {
    LoadOptions lo;
    lo.n_threads = 2;
    auto model = Model::load(testing::stories_path(), lo);
    watch = model;
    s = model->session(exact_config(64, 512));
  }
  EXPECT_FALSE(watch.expired()) << "the session does not hold its model";
  const auto got = decode_all(*s, tokens, 0);
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_LT(rel_diff(got[i], expected[i]), kTol) << i;
  s.reset();
  EXPECT_TRUE(watch.expired()) << "the last session did not release its model";
}

// begin_prompt keeps the cached prefix; decoding the rest must equal a cold prefill.
void check_prefix_reuse(const std::vector<Token>& first, const std::vector<Token>& second,
                        std::size_t expected_reuse) {
  auto model = stories();
  auto s = model->session(exact_config(128, 512));
  decode_all(*s, first, 0);
  const std::size_t n = s->begin_prompt(0, second);
  EXPECT_EQ(n, expected_reuse);
  EXPECT_EQ(s->seq_length(0), n);
  auto warm = decode_all(*s, std::span(second).subspan(n), 0, static_cast<std::int32_t>(n));
  auto cold_session = model->session(exact_config(128, 512));
  auto cold = decode_all(*cold_session, second, 0);
  for (std::size_t i = n; i < second.size(); ++i) {
    EXPECT_LT(rel_diff(warm[i - n], cold[i]), kTol) << i;
  }
  EXPECT_EQ(s->free_cells(), 128 - second.size());
}

TEST(SessionInvariants, PrefixReuseSharedPrefix) {
  std::mt19937 rng(3);
  auto a = random_tokens(rng, 10);
  auto b = a;
  auto more = random_tokens(rng, 6);
  b.insert(b.end(), more.begin(), more.end());
  check_prefix_reuse(a, b, 10);
}

TEST(SessionInvariants, PrefixReuseDivergingPrefix) {
  std::mt19937 rng(4);
  auto a = random_tokens(rng, 10);
  auto b = std::vector<Token>(a.begin(), a.begin() + 6);
  b.push_back(a[6] == 100 ? 101 : 100);
  auto more = random_tokens(rng, 4);
  b.insert(b.end(), more.begin(), more.end());
  check_prefix_reuse(a, b, 6);
}

TEST(SessionInvariants, PrefixReuseEmptyPrefix) {
  std::mt19937 rng(5);
  auto a = random_tokens(rng, 10);
  auto b = random_tokens(rng, 8);
  b[0] = a[0] == 100 ? 101 : 100;
  check_prefix_reuse(a, b, 0);
}

TEST(SessionInvariants, PrefixReuseIdenticalPromptKeepsAllButLast) {
  std::mt19937 rng(6);
  auto a = random_tokens(rng, 9);
  check_prefix_reuse(a, a, 8);
}

}  // namespace
}  // namespace seam
