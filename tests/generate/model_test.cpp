// generate() and Generation on the real stories260K checkpoint: against a
// hand-written greedy loop, chunked prefill, prefix reuse, seeded sampling,
// shared batches of two sequences, stops, context full and error propagation.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "seam/error.h"
#include "seam/generate.h"
#include "seam/model.h"

namespace seam {
namespace {

std::shared_ptr<const Model> stories() {
  static std::shared_ptr<const Model> model = [] {
    LoadOptions lo;
    lo.n_threads = 2;
    return Model::load(std::string(SEAM_SHARED_DIR) + "/models/stories260K.gguf", lo);
  }();
  return model;
}

std::unique_ptr<Session> session(std::uint32_t n_ctx = 256, std::uint32_t n_seq = 1) {
  return stories()->session({.n_ctx = n_ctx, .n_batch = 64, .n_seq_max = n_seq});
}

std::vector<Token> prompt() { return stories()->tokenize("Once upon a time", true, false); }

GenerateConfig greedy(int n) {
  GenerateConfig c;
  c.sampler.temperature = 0;
  c.max_tokens = n;
  return c;
}

TEST(GenerateModel, GreedyMatchesAPlainArgmaxLoop) {
  const auto p = prompt();
  auto s1 = session();
  std::vector<Decode> batch;
  for (std::size_t i = 0; i < p.size(); ++i)
    batch.push_back({p[i], static_cast<std::int32_t>(i), 0, i + 1 == p.size()});
  s1->decode(batch);
  std::vector<Token> expect;
  std::size_t row = p.size() - 1;
  for (int i = 0; i < 30; ++i) {
    const Token t = argmax(s1->logits(row));
    if (stories()->is_eog(t)) break;
    expect.push_back(t);
    const Decode d{t, static_cast<std::int32_t>(p.size() + i), 0, true};
    s1->decode(std::span<const Decode>(&d, 1));
    row = 0;
  }
  auto s2 = session();
  std::string streamed;
  const GenerateResult r =
      generate(*stories(), *s2, p, greedy(30), [&](std::string_view t) { streamed += t; });
  EXPECT_EQ(r.tokens, expect);
  EXPECT_EQ(r.text, streamed);
  std::string pieces;
  for (Token t : expect) pieces += stories()->detok(t, Detok::Plain);
  EXPECT_EQ(r.text, pieces);
  EXPECT_EQ(r.prompt_tokens, p.size());
  EXPECT_EQ(r.completion_tokens, expect.size());
  EXPECT_GT(r.ttft_ms, 0);
  EXPECT_GT(r.prefill_tokens_per_s, 0);
  EXPECT_GT(r.decode_tokens_per_s, 0);
}

TEST(GenerateModel, ChunkedPrefillAndPrefixReuseChangeNothing) {
  const auto p =
      stories()->tokenize("Once upon a time, there was a little girl named", true, false);
  auto s = session();
  const GenerateResult whole = generate(*stories(), *s, p, greedy(20));
  EXPECT_EQ(whole.cached_prompt_tokens, 0u);
  GenerateConfig chunked = greedy(20);
  chunked.n_batch = 3;
  auto s2 = session();
  EXPECT_EQ(generate(*stories(), *s2, p, chunked).tokens, whole.tokens);
  // Same session again: everything but the last prompt token comes from the cache.
  const GenerateResult again = generate(*stories(), *s, p, greedy(20));
  EXPECT_EQ(again.cached_prompt_tokens, p.size() - 1);
  EXPECT_EQ(again.tokens, whole.tokens);
}

TEST(GenerateModel, PrefillProgressPerChunk) {
  const auto p =
      stories()->tokenize("Once upon a time, there was a little girl named", true, false);
  ASSERT_GT(p.size(), 7u);
  std::vector<std::size_t> seen;
  GenerateConfig c = greedy(2);
  c.n_batch = 3;
  c.on_prefill = [&](std::size_t done, std::size_t total, std::size_t cached) {
    EXPECT_EQ(total, p.size());
    EXPECT_LE(cached, done);
    seen.push_back(done);
  };
  auto s = session();
  generate(*stories(), *s, p, c);
  std::vector<std::size_t> expect;
  for (std::size_t d = 3; d < p.size(); d += 3) expect.push_back(d);
  expect.push_back(p.size());
  EXPECT_EQ(seen, expect);
  seen.clear();
  generate(*stories(), *s, p, c);  // all but the last token cached: one pass
  EXPECT_EQ(seen, std::vector<std::size_t>{p.size()});
}

TEST(GenerateModel, SeededSamplingIsDeterministic) {
  GenerateConfig c;
  c.max_tokens = 40;
  c.sampler.temperature = 1.0f;
  c.sampler.seed = 7;
  c.ignore_eos = true;
  auto run = [&](std::uint64_t seed) {
    c.sampler.seed = seed;
    auto s = session();
    return generate(*stories(), *s, prompt(), c).tokens;
  };
  const auto a = run(7);
  EXPECT_EQ(a.size(), 40u);
  EXPECT_EQ(run(7), a);
  EXPECT_NE(run(8), a);
}

TEST(GenerateModel, TwoSequencesSharingDecodeCallsMatchEachAlone) {
  GenerateConfig c;
  c.max_tokens = 25;
  c.sampler.temperature = 0.9f;
  c.sampler.seed = 3;
  const auto pa = prompt();
  const auto pb = stories()->tokenize("The dog", true, false);
  auto alone = [&](const std::vector<Token>& p) {
    auto s = session();
    return generate(*stories(), *s, p, c).tokens;
  };
  auto shared = session(512, 2);
  GenerateConfig ca = c, cb = c;
  ca.seq = 0;
  cb.seq = 1;
  Generation ga(*stories(), pa, ca), gb(*stories(), pb, cb);
  ga.begin(shared->begin_prompt(0, ga.prompt()));
  gb.begin(shared->begin_prompt(1, gb.prompt()));
  while (!ga.done() || !gb.done()) {
    std::vector<Decode> batch;
    const bool a_in = ga.next_decodes(batch) > 0 && batch.back().logits;
    const std::size_t row_a = batch.size() - 1;
    const bool b_in = gb.next_decodes(batch) > 0 && batch.back().logits;
    if (batch.empty()) break;
    shared->decode(batch);
    if (a_in) ga.on_logits(shared->logits(row_a));
    if (b_in) gb.on_logits(shared->logits(batch.size() - 1));
  }
  EXPECT_EQ(ga.result().tokens, alone(pa));
  EXPECT_EQ(gb.result().tokens, alone(pb));
}

TEST(GenerateModel, StopStringAcrossTokens) {
  auto s = session();
  const GenerateResult full = generate(*stories(), *s, prompt(), greedy(30));
  ASSERT_GT(full.text.size(), 20u);
  // A stop string that starts inside one token and ends inside a later one.
  std::size_t first = stories()->detok(full.tokens[0], Detok::Plain).size();
  std::size_t second = stories()->detok(full.tokens[1], Detok::Plain).size();
  ASSERT_GT(first + second, 2u);
  const std::size_t at = first - 1;
  const std::string stop = full.text.substr(at, second + 2);
  GenerateConfig c = greedy(30);
  c.stop = {stop};
  auto s2 = session();
  std::string streamed;
  const GenerateResult r =
      generate(*stories(), *s2, prompt(), c, [&](std::string_view t) { streamed += t; });
  EXPECT_EQ(r.finish, FinishReason::Stop);
  EXPECT_EQ(r.text, full.text.substr(0, full.text.find(stop)));
  EXPECT_EQ(streamed, r.text);
}

TEST(GenerateModel, ContextFullEndsWithLength) {
  auto s = session(16);
  GenerateConfig c = greedy(-1);
  c.ignore_eos = true;
  const auto p = prompt();
  const GenerateResult r = generate(*stories(), *s, p, c);
  EXPECT_EQ(r.finish, FinishReason::Length);
  // Every cell holds a token; the last sampled token is never decoded.
  EXPECT_EQ(p.size() + r.completion_tokens, 17u);
}

TEST(GenerateModel, CancelAndTimeout) {
  std::atomic<bool> cancel{true};
  GenerateConfig c = greedy(50);
  c.cancel = &cancel;
  auto s = session();
  EXPECT_EQ(generate(*stories(), *s, prompt(), c).finish, FinishReason::Cancelled);
  c.cancel = nullptr;
  // A clock that moves a second per reading: the first check after begin() is
  // past the half-second limit, however fast the machine.
  auto t = std::chrono::steady_clock::time_point{};
  c.clock = [&t] { return t += std::chrono::seconds(1); };
  c.timeout_s = 0.5;
  EXPECT_EQ(generate(*stories(), *s, prompt(), c).finish, FinishReason::Timeout);
  // The session is still usable after either.
  EXPECT_EQ(generate(*stories(), *s, prompt(), greedy(5)).completion_tokens, 5u);
}

// A session whose forward pass fails, as a broken backend would.
class FailingSession : public Session {
 public:
  void decode(std::span<const Decode>) override {
    corrupted_ = true;
    throw Error(Errc::BackendFailure, "simulated backend failure");
  }
  std::span<const float> logits(std::size_t) const override {
    throw Error(Errc::InvalidArgument, "no logits");
  }
  void clear_seq(std::uint32_t) override {}
  void copy_seq(std::uint32_t, std::uint32_t) override {}
  std::size_t begin_prompt(std::uint32_t, std::span<const Token>) override {
    if (corrupted_) throw Error(Errc::SessionCorrupted, "simulated corrupted session");
    return 0;
  }
  std::uint32_t n_ctx() const override { return 64; }
  std::uint32_t n_seq_max() const override { return 1; }
  std::uint32_t free_cells() const override { return 64; }
  std::uint32_t seq_length(std::uint32_t) const override { return 0; }
  std::int32_t seq_next_pos(std::uint32_t) const override { return 0; }
  bool corrupted() const override { return corrupted_; }

 private:
  bool corrupted_ = false;
};

TEST(GenerateModel, BackendFailuresPropagateUnchanged) {
  FailingSession s;
  try {
    generate(*stories(), s, prompt(), greedy(5));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::BackendFailure);
  }
  try {
    generate(*stories(), s, prompt(), greedy(5));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::SessionCorrupted);
  }
}

}  // namespace
}  // namespace seam
