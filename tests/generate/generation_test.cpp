// The Generation state machine driven by a fake token -> text stream: stop
// strings split across tokens in every way, UTF-8 split across tokens, EOG,
// lengths, logprobs, timeout and cancellation. No model needed.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "generate/utf8.h"
#include "seam/error.h"
#include "seam/generate.h"

namespace seam {
namespace {

// Token i has text pieces[i]; the last id is the one end-of-generation token.
struct Script {
  std::vector<std::string> pieces;
  Token eog() const { return static_cast<Token>(pieces.size()); }
  Vocabulary vocab() const {
    Vocabulary v;
    v.n_vocab = static_cast<std::uint32_t>(pieces.size() + 1);
    auto p = pieces;
    v.piece = [p](Token t) { return static_cast<std::size_t>(t) < p.size() ? p[t] : ""; };
    const Token e = eog();
    v.is_eog = [e](Token t) { return t == e; };
    return v;
  }
};

// Logits that make greedy sampling pick `t`.
std::vector<float> one_hot(std::size_t n, Token t) {
  std::vector<float> l(n, 0.0f);
  l[static_cast<std::size_t>(t)] = 10.0f;
  return l;
}

GenerateConfig greedy() {
  GenerateConfig c;
  c.sampler.temperature = 0;
  c.max_tokens = -1;
  return c;
}

struct Outcome {
  std::vector<std::string> chunks;  // every piece of streamed text, in order
  std::string streamed;
  GenerateResult result;
};

// Drives a Generation over the script: the model "wants" tokens 0, 1, 2, ...
// and then the EOG token.
Outcome drive(const Script& s, GenerateConfig cfg) {
  Generation g(s.vocab(), {0}, cfg);
  g.begin(0);
  Outcome run;
  auto take = [&](const std::string& t) {
    if (t.empty()) return;
    run.chunks.push_back(t);
    run.streamed += t;
  };
  std::vector<Decode> batch;
  Token next = 0;
  while (!g.done()) {
    batch.clear();
    if (g.next_decodes(batch) == 0) break;
    EXPECT_TRUE(batch.back().logits);
    take(g.on_logits(one_hot(s.pieces.size() + 1, next)).text);
    next = std::min<Token>(next + 1, s.eog());
  }
  take(g.take_text());
  run.result = g.result();
  return run;
}

// Every way to cut `text` into consecutive non-empty pieces.
std::vector<std::vector<std::string>> all_splits(const std::string& text) {
  std::vector<std::vector<std::string>> out;
  const std::size_t cuts = text.size() - 1;
  for (std::uint32_t mask = 0; mask < (1u << cuts); ++mask) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (std::size_t i = 0; i < cuts; ++i) {
      if (mask & (1u << i)) {
        parts.push_back(text.substr(start, i + 1 - start));
        start = i + 1;
      }
    }
    parts.push_back(text.substr(start));
    out.push_back(std::move(parts));
  }
  return out;
}

TEST(Generation, StopStringSplitEveryWay) {
  const std::string text = "ab<END>cd";
  GenerateConfig cfg = greedy();
  cfg.stop = {"<END>"};
  for (const auto& split : all_splits(text)) {
    Outcome r = drive({split}, cfg);
    SCOPED_TRACE(::testing::PrintToString(split));
    EXPECT_EQ(r.streamed, "ab");
    EXPECT_EQ(r.result.text, "ab");
    EXPECT_EQ(r.result.finish, FinishReason::Stop);
    ASSERT_TRUE(r.result.stop_string);
    EXPECT_EQ(*r.result.stop_string, "<END>");
    // The generation stops on the token that completes the match.
    std::size_t bytes = 0, n = 0;
    while (bytes < 7) bytes += split[n++].size();
    EXPECT_EQ(r.result.tokens.size(), n);
  }
}

TEST(Generation, NearMissesAreReleasedNeverRetracted) {
  // "<EN" and "<E" look like the start of "<END>" but never finish it.
  const std::string text = "x<EN<E>y<E";
  GenerateConfig cfg = greedy();
  cfg.stop = {"<END>"};
  for (const auto& split : all_splits(text)) {
    Outcome r = drive({split}, cfg);
    SCOPED_TRACE(::testing::PrintToString(split));
    EXPECT_EQ(r.streamed, text);
    EXPECT_EQ(r.result.text, text);
    EXPECT_EQ(r.result.finish, FinishReason::Stop);  // the script's EOG
    EXPECT_FALSE(r.result.stop_string);
  }
}

TEST(Generation, HeldTextWaitsForTheStopStringToBeDecided) {
  GenerateConfig cfg = greedy();
  cfg.stop = {"<END>"};
  Script s{{"hello <", "EN", "D>"}};
  Generation g(s.vocab(), {0}, cfg);
  g.begin(0);
  std::vector<Decode> b;
  g.next_decodes(b);
  EXPECT_EQ(g.on_logits(one_hot(4, 0)).text, "hello ");
  b.clear();
  g.next_decodes(b);
  EXPECT_EQ(g.on_logits(one_hot(4, 1)).text, "");
  b.clear();
  g.next_decodes(b);
  Step last = g.on_logits(one_hot(4, 2));
  EXPECT_EQ(last.text, "");
  EXPECT_TRUE(last.finished);
  EXPECT_EQ(g.result().text, "hello ");
}

TEST(Generation, SeveralStopStringsEarliestWins) {
  GenerateConfig cfg = greedy();
  cfg.stop = {"cd", "bc", "zz"};
  for (const auto& split : all_splits("abcdef")) {
    Outcome r = drive({split}, cfg);
    EXPECT_EQ(r.streamed, "a");
    ASSERT_TRUE(r.result.stop_string);
    EXPECT_EQ(*r.result.stop_string, "bc");
  }
}

TEST(Generation, MultiByteCharactersSplitEveryWay) {
  const std::string text = "h\xC3\xA9\xE4\xB8\x96\xF0\x9F\x99\x82!";  // hé世🙂!
  for (const auto& split : all_splits(text)) {
    Outcome r = drive({split}, greedy());
    SCOPED_TRACE(::testing::PrintToString(split));
    EXPECT_EQ(r.streamed, text);
    for (const std::string& chunk : r.chunks) EXPECT_TRUE(utf8_valid(chunk)) << chunk;
  }
}

TEST(Generation, StopStringOfMultiByteCharacters) {
  const std::string text = "a\xC3\xA9\xE4\xB8\x96z";  // aé世z, stop at 世
  GenerateConfig cfg = greedy();
  cfg.stop = {"\xE4\xB8\x96"};
  for (const auto& split : all_splits(text)) {
    Outcome r = drive({split}, cfg);
    EXPECT_EQ(r.streamed, "a\xC3\xA9");
    for (const std::string& chunk : r.chunks) EXPECT_TRUE(utf8_valid(chunk));
  }
}

TEST(Generation, BrokenUtf8BecomesReplacementCharacters) {
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(drive({{"a\x80", "b"}}, greedy()).streamed, "a" + fffd + "b");
  EXPECT_EQ(drive({{"a\xE4\xB8", "b"}}, greedy()).streamed, "a" + fffd + "b");
  // An unfinished character at the very end is replaced, not dropped.
  EXPECT_EQ(drive({{"a", "\xE4\xB8"}}, greedy()).streamed, "a" + fffd);
  EXPECT_EQ(drive({{"\xC0\xAF"}}, greedy()).streamed, fffd + fffd);  // overlong
}

TEST(Generation, EndOfGenerationStops) {
  Outcome r = drive({{"a", "b"}}, greedy());
  EXPECT_EQ(r.result.finish, FinishReason::Stop);
  EXPECT_EQ(r.result.tokens, (std::vector<Token>{0, 1}));  // the EOG id is not a token
  EXPECT_EQ(r.result.completion_tokens, 2u);
  EXPECT_FALSE(r.result.stop_string);
}

TEST(Generation, IgnoreEosBansEveryEogId) {
  Script s{{"a", "b"}};
  GenerateConfig cfg = greedy();
  cfg.ignore_eos = true;
  cfg.max_tokens = 3;
  Generation g(s.vocab(), {0}, cfg);
  g.begin(0);
  std::vector<Decode> b;
  std::vector<float> l = {1.0f, 2.0f, 9.0f};  // EOG (id 2) is the model's favourite
  while (!g.done()) {
    b.clear();
    g.next_decodes(b);
    g.on_logits(l);
  }
  EXPECT_EQ(g.result().tokens, (std::vector<Token>{1, 1, 1}));
  EXPECT_EQ(g.result().finish, FinishReason::Length);
  EXPECT_EQ(g.result().text, "bbb");
}

TEST(Generation, MaxTokensEndsWithLength) {
  GenerateConfig cfg = greedy();
  cfg.max_tokens = 2;
  Outcome r = drive({{"a", "b", "c"}}, cfg);
  EXPECT_EQ(r.result.finish, FinishReason::Length);
  EXPECT_EQ(r.streamed, "ab");
  EXPECT_EQ(r.result.completion_tokens, 2u);
  // A held-back stop prefix is real text when the length runs out.
  cfg.stop = {"bc!"};
  r = drive({{"a", "b", "c"}}, cfg);
  EXPECT_EQ(r.streamed, "ab");
  EXPECT_EQ(r.result.finish, FinishReason::Length);
  cfg.max_tokens = 0;
  r = drive({{"a"}}, cfg);
  EXPECT_EQ(r.result.finish, FinishReason::Length);
  EXPECT_EQ(r.result.completion_tokens, 0u);
}

TEST(Generation, PrefillChunksAndPositions) {
  Script s{{"a", "b", "c", "d", "e", "f"}};
  GenerateConfig cfg = greedy();
  cfg.seq = 3;
  cfg.max_tokens = 2;
  Generation g(s.vocab(), {0, 1, 2, 3, 4}, cfg);
  g.begin(1);  // token 0 is cached
  std::vector<Decode> b;
  EXPECT_EQ(g.next_decodes(b, 3), 3u);
  EXPECT_EQ(g.phase(), Generation::Phase::Prefill);
  EXPECT_EQ(g.next_decodes(b, 3), 1u);
  ASSERT_EQ(b.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(b[i].token, static_cast<Token>(i + 1));
    EXPECT_EQ(b[i].pos, static_cast<std::int32_t>(i + 1));
    EXPECT_EQ(b[i].seq, 3u);
    EXPECT_EQ(b[i].logits, i == 3);
  }
  EXPECT_EQ(g.next_decodes(b), 0u);  // waiting for logits
  g.on_logits(one_hot(7, 5));
  b.clear();
  EXPECT_EQ(g.next_decodes(b), 1u);
  EXPECT_EQ(b[0].token, 5);
  EXPECT_EQ(b[0].pos, 5);
  EXPECT_TRUE(b[0].logits);
  Step st = g.on_logits(one_hot(7, 4));
  EXPECT_TRUE(st.finished);
  EXPECT_EQ(g.result().prompt_tokens, 5u);
  EXPECT_EQ(g.result().cached_prompt_tokens, 1u);
  EXPECT_EQ(g.result().text, "fe");
  EXPECT_THROW(g.on_logits(one_hot(7, 4)), Error);
}

TEST(Generation, TwoSequencesInSharedBatches) {
  // A scheduler packs both sequences' Decodes into one batch per step.
  Script s{{"x", "y", "z"}};
  GenerateConfig a = greedy(), b = greedy();
  a.seq = 0;
  b.seq = 1;
  a.max_tokens = 2;
  b.max_tokens = 3;
  Generation ga(s.vocab(), {0, 1}, a), gb(s.vocab(), {2}, b);
  ga.begin(0);
  gb.begin(0);
  int steps = 0;
  while (!ga.done() || !gb.done()) {
    std::vector<Decode> batch;
    const bool a_in = ga.next_decodes(batch) > 0 && batch.back().logits;
    const std::size_t row_a = batch.size() - 1;
    const bool b_in = gb.next_decodes(batch) > 0 && batch.back().logits;
    ASSERT_FALSE(batch.empty());
    if (a_in) {
      EXPECT_EQ(batch[row_a].seq, 0u);
      ga.on_logits(one_hot(4, 1));
    }
    if (b_in) {
      EXPECT_EQ(batch.back().seq, 1u);
      gb.on_logits(one_hot(4, 2));
    }
    ++steps;
  }
  EXPECT_EQ(steps, 3);
  EXPECT_EQ(ga.result().text, "yy");
  EXPECT_EQ(gb.result().text, "zzz");
}

TEST(Generation, LogprobsAreLogSoftmaxOfRawLogits) {
  Script s{{"a", "b", "c"}};
  GenerateConfig cfg = greedy();
  cfg.max_tokens = 1;
  cfg.logprobs = 2;
  cfg.sampler.logit_bias = {{0, 100.0f}};  // the sampler's choice, not the model's belief
  Generation g(s.vocab(), {0}, cfg);
  g.begin(0);
  std::vector<Decode> b;
  g.next_decodes(b);
  const std::vector<float> l = {1.0f, 3.0f, 2.0f, 2.0f};
  Step st = g.on_logits(l);
  const double z = std::log(std::exp(1.0) + std::exp(3.0) + 2 * std::exp(2.0));
  ASSERT_TRUE(st.logprob);
  EXPECT_EQ(st.logprob->token, 0);
  EXPECT_NEAR(st.logprob->logprob, 1.0 - z, 1e-5);
  ASSERT_EQ(st.logprob->top.size(), 2u);
  EXPECT_EQ(st.logprob->top[0].token, 1);
  EXPECT_NEAR(st.logprob->top[0].logprob, 3.0 - z, 1e-5);
  EXPECT_EQ(st.logprob->top[1].token, 2);  // ties with 3: lowest id
  EXPECT_EQ(g.result().logprobs.size(), 1u);
}

// A clock that moves only when the test says so: timeouts land on a known step,
// whatever the machine's speed or load.
struct FakeClock {
  std::chrono::steady_clock::time_point t{};
  void advance_ms(int ms) { t += std::chrono::milliseconds(ms); }
  std::function<std::chrono::steady_clock::time_point()> fn() {
    return [this] { return t; };
  }
};

TEST(Generation, TimeoutEndsTheGeneration) {
  Script s{{"a"}};
  FakeClock clock;
  GenerateConfig cfg = greedy();
  cfg.timeout_s = 0.05;
  cfg.clock = clock.fn();
  Generation g(s.vocab(), {0}, cfg);
  g.begin(0);
  std::vector<Decode> b;
  int steps = 0;
  while (!g.done() && steps < 1000) {
    b.clear();
    if (g.next_decodes(b) == 0) break;
    clock.advance_ms(10);
    g.on_logits(one_hot(2, 0));
    ++steps;
  }
  EXPECT_TRUE(g.done());
  EXPECT_EQ(g.result().finish, FinishReason::Timeout);
  // 10 ms per step, a 50 ms budget: steps 1-4 sample a token, step 5 (at
  // 50 ms) notices the timeout in on_logits before sampling.
  EXPECT_EQ(steps, 5);
  EXPECT_EQ(g.result().tokens.size(), 4u);
  EXPECT_EQ(g.result().text, "aaaa");
}

TEST(Generation, TimeoutDuringPrefill) {
  Script s{{"a"}};
  FakeClock clock;
  GenerateConfig cfg = greedy();
  cfg.timeout_s = 0.02;
  cfg.clock = clock.fn();
  Generation g(s.vocab(), std::vector<Token>(100, 0), cfg);
  g.begin(0);
  std::vector<Decode> b;
  while (g.next_decodes(b, 1) == 1) clock.advance_ms(5);
  EXPECT_TRUE(g.done());
  EXPECT_EQ(g.result().finish, FinishReason::Timeout);
  // 5 ms per prompt token, 20 ms: four chunks handed out, the fifth call times out.
  EXPECT_EQ(b.size(), 4u);
  EXPECT_TRUE(g.result().tokens.empty());
}

TEST(Generation, CancelFromAnotherThread) {
  Script s{{"a", "<"}};
  std::atomic<bool> cancel{false};
  GenerateConfig cfg = greedy();
  cfg.cancel = &cancel;
  cfg.stop = {"<!>"};
  Generation g(s.vocab(), {0}, cfg);
  g.begin(0);
  // The other thread cancels after the 4th step and the loop waits for it
  // (join): the cancel lands at a known step, not after a sleep.
  constexpr std::size_t kCancelAfter = 4;
  std::vector<Decode> b;
  std::string streamed;
  std::size_t steps = 0;
  while (!g.done()) {
    b.clear();
    if (g.next_decodes(b) == 0) break;
    // Alternating "a" and "<": an odd step ends on "<", held back as a
    // possible start of "<!>".
    streamed += g.on_logits(one_hot(3, static_cast<Token>(steps++ % 2))).text;
    if (steps == kCancelAfter) std::thread([&] { cancel.store(true); }).join();
    ASSERT_LE(steps, kCancelAfter) << "the cancel was not noticed";
  }
  streamed += g.take_text();
  EXPECT_EQ(g.result().finish, FinishReason::Cancelled);
  EXPECT_EQ(steps, kCancelAfter);
  // What was held back for the stop string (the "<" of step 4) comes out on cancel.
  EXPECT_EQ(g.result().text, "a<a<");
  EXPECT_EQ(streamed, g.result().text);
  EXPECT_EQ(streamed.size(), g.result().tokens.size());
}

TEST(Generation, CancelledBeforeItStarts) {
  Script s{{"a"}};
  std::atomic<bool> cancel{true};
  GenerateConfig cfg = greedy();
  cfg.cancel = &cancel;
  Generation g(s.vocab(), {0, 0}, cfg);
  g.begin(0);
  std::vector<Decode> b;
  EXPECT_EQ(g.next_decodes(b), 0u);
  EXPECT_EQ(g.result().finish, FinishReason::Cancelled);
}

TEST(Generation, RejectsBadConfig) {
  Script s{{"a"}};
  GenerateConfig cfg = greedy();
  EXPECT_THROW(Generation(s.vocab(), {}, cfg), Error);
  EXPECT_THROW(Generation(s.vocab(), {7}, cfg), Error);  // outside the vocabulary
  cfg.stop = {""};
  EXPECT_THROW(Generation(s.vocab(), {0}, cfg), Error);
  cfg.stop = {"\xFF"};
  EXPECT_THROW(Generation(s.vocab(), {0}, cfg), Error);
  cfg.stop = {};
  cfg.timeout_s = -1;
  EXPECT_THROW(Generation(s.vocab(), {0}, cfg), Error);
  cfg.timeout_s = 0;
  cfg.sampler.top_p = 2;
  EXPECT_THROW(Generation(s.vocab(), {0}, cfg), Error);
  cfg.sampler.top_p = 1;
  Generation g(s.vocab(), {0}, cfg);
  std::vector<Decode> b;
  EXPECT_THROW(g.next_decodes(b), Error);  // begin() first
  EXPECT_THROW(g.begin(1), Error);         // the last prompt token must be decoded
}

}  // namespace
}  // namespace seam
