// The generation loop (DESIGN.md §4): everything between "logits came back"
// and "text went out" for one sequence — sampling, stops, streaming text and
// figures — as ONE state machine, `Generation`. The CLI, the server's
// scheduler and the observer all drive it; none re-implements a piece of it.
//
// Driving a Generation (one sequence; a scheduler does this for many at once
// and packs their Decodes into shared Session::decode calls):
//
//   Generation g(model, prompt, config);
//   g.begin(session.begin_prompt(config.seq, g.prompt()));
//   std::vector<Decode> batch;
//   while (!g.done()) {
//     batch.clear();
//     g.next_decodes(batch, n_batch);        // a prompt chunk, or the last sampled token
//     if (batch.empty()) break;
//     session.decode(batch);
//     if (batch.back().logits) stream(g.on_logits(session.logits(batch.size() - 1)).text);
//   }
//   stream(g.take_text());                   // text released by a finish outside on_logits
//   const GenerateResult& r = g.result();
//
// Failure contract: a Session error thrown by decode (BackendFailure,
// SessionCorrupted, ContextFull) propagates to the caller unchanged; the
// Generation that asked for that decode cannot continue (its Decodes were
// handed out) and must be dropped. After BackendFailure or SessionCorrupted
// the Session itself must not be reused: destroy and recreate it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "seam/model.h"
#include "seam/session.h"
#include "seam/types.h"

namespace seam {

// ---------------------------------------------------------------- sampling

// The stages of the sampler chain, applied in SamplerConfig::order.
enum class SamplerStage {
  LogitBias,    // add SamplerConfig::logit_bias (and -inf on end-of-generation ids with ignore_eos)
  Penalties,    // repetition, frequency and presence penalties over the last repeat_last_n tokens
  TopK,         // keep the top_k highest logits
  TypicalP,     // locally typical sampling: keep tokens whose surprisal is closest to the entropy
  TopP,         // keep the smallest most-likely set whose probability reaches top_p
  MinP,         // keep tokens with p >= min_p * p(most likely)
  Temperature,  // divide logits by the temperature
};
std::string_view sampler_stage_name(SamplerStage s);
// Parses "logit_bias", "penalties", "top_k", "typical_p", "top_p", "min_p",
// "temperature" (also "-" spelled); nullopt for anything else.
std::optional<SamplerStage> parse_sampler_stage(std::string_view name);
// llama.cpp's order: bias, penalties, top-k, typical, top-p, min-p, temperature.
std::vector<SamplerStage> default_sampler_order();

struct SamplerConfig {
  float temperature = 0.8f;     // 0 = greedy: argmax after bias and penalties, lowest id on ties
  std::int32_t top_k = 40;      // 0 = off
  float top_p = 0.95f;          // in (0, 1]; 1 = off
  float min_p = 0.05f;          // in [0, 1]; 0 = off
  float typical_p = 1.0f;       // in (0, 1]; 1 = off
  float repeat_penalty = 1.0f;  // > 0; 1 = off. Positive logits are divided, negative multiplied
  std::int32_t repeat_last_n = 64;  // penalty window in tokens (prompt included); 0 = off, -1 = all
  float frequency_penalty = 0.0f;   // subtracted once per occurrence in the window
  float presence_penalty = 0.0f;    // subtracted once if present in the window
  std::vector<std::pair<Token, float>> logit_bias{};  // added to raw logits; -inf bans a token
  std::vector<SamplerStage> order = default_sampler_order();  // a stage left out is skipped
  std::uint64_t seed = 0;
};

// Throws Error(InvalidArgument) naming the first value out of range (negative
// temperature, top_p outside (0,1], a stage listed twice, ...). `n_vocab` > 0
// also checks the logit-bias ids.
void validate(const SamplerConfig& config, std::uint32_t n_vocab = 0);

// One candidate of the sampler chain: a token and its current logit.
struct Candidate {
  Token id = 0;
  float logit = 0.0f;
};

// The sampler chain over one logits row. Deterministic: the same seed, logits
// and history give the same tokens (the draw uses its own mt19937_64 stream).
class Sampler {
 public:
  // Validates `config` (see validate()).
  explicit Sampler(SamplerConfig config);

  // Bans (logit -inf) these ids in the LogitBias stage, e.g. every
  // end-of-generation id when the caller ignores EOS.
  void ban(std::vector<Token> ids);

  // Runs the chain and draws a token. `recent` is the token history the
  // penalties look at (the caller passes its last repeat_last_n tokens or
  // all of them; the sampler takes the tail itself). Throws
  // Error(InvalidArgument) when a logit-bias id is outside the row or when
  // every token has been banned.
  Token sample(std::span<const float> logits, std::span<const Token> recent);

  // The candidates left after the chain (before the draw), most likely
  // first (lowest id on ties), with the logits the draw turns into
  // probabilities by softmax. With temperature 0 the single argmax.
  std::vector<Candidate> candidates(std::span<const float> logits, std::span<const Token> recent);

  const SamplerConfig& config() const { return cfg_; }

 private:
  // Returns the highest logit left.
  float run_chain(std::span<const float> logits, std::span<const Token> recent);
  SamplerConfig cfg_;
  std::vector<Token> banned_;
  std::mt19937_64 rng_;
  std::vector<Candidate> cand_;  // [n kept], reused across calls
  bool sorted_ = false;          // cand_ is sorted by logit, descending
  std::vector<double> weight_;   // the draw's e^(logit - max) per candidate, reused
};

// argmax, lowest id on ties; NaN entries are skipped. Throws
// Error(InvalidArgument) for an empty row or one of NaNs only.
Token argmax(std::span<const float> logits);

// ------------------------------------------------------- the state machine

enum class FinishReason { Stop, Length, Timeout, Cancelled };
std::string_view finish_reason_name(FinishReason r);  // "stop", "length", "timeout", "cancelled"

// Called by generate() after each prefill chunk: prompt tokens now in the
// cache (cached ones included), the prompt's length, and how many were cached.
using PrefillProgress =
    std::function<void(std::size_t done, std::size_t total, std::size_t cached)>;

struct GenerateConfig {
  std::int32_t max_tokens = 256;  // < 0: until end of generation or context full
  SamplerConfig sampler{};
  std::vector<std::string>
      stop{};               // stop strings (non-empty, valid UTF-8); the match is not emitted
  bool ignore_eos = false;  // ban every end-of-generation id instead of stopping on it
  double timeout_s = 0;     // wall-clock limit from begin(); 0 = none
  // Set from any thread (or a signal handler) to stop: the generation ends
  // with FinishReason::Cancelled at its next step. Owned by the caller and
  // must outlive the Generation; null = not cancellable.
  const std::atomic<bool>* cancel = nullptr;
  // Per-token log-probabilities: -1 = off; N >= 0 = on, with the N most
  // likely alternatives of each step.
  std::int32_t logprobs = -1;
  std::uint32_t seq = 0;         // the session sequence to generate on
  std::uint32_t n_batch = 0;     // prefill chunk size for generate(); 0 = the whole prompt at once
  PrefillProgress on_prefill{};  // generate() only (a scheduler reports its own); may be empty
  // The clock behind timeout_s and the figures; empty = std::chrono::steady_clock::now.
  // Tests inject one that advances per step, so a timeout lands on a known step.
  std::function<std::chrono::steady_clock::time_point()> clock{};
};

struct TokenAlternative {
  Token token = 0;
  float logprob = 0.0f;
};
// Log-probabilities are the log-softmax of the model's RAW logits (before
// bias, penalties, truncation or temperature): what the model believes, not
// what the sampler made of it.
struct TokenLogprob {
  Token token = 0;
  float logprob = 0.0f;
  std::vector<TokenAlternative>
      top;  // the N most likely ids, most likely first (lowest id on ties)
};

struct GenerateResult {
  std::string text{};           // every byte released, stop string excluded
  std::vector<Token> tokens{};  // generated ids; an end-of-generation id that stopped it is not one
  FinishReason finish = FinishReason::Stop;
  std::optional<std::string> stop_string{};  // the stop string that ended it, if one did
  std::size_t prompt_tokens = 0;
  std::size_t cached_prompt_tokens = 0;  // reused from the KV cache, not recomputed
  std::size_t completion_tokens = 0;     // == tokens.size()
  double ttft_ms = 0;                    // begin() -> first token sampled
  double prefill_tokens_per_s = 0;       // uncached prompt tokens / (begin() -> prompt logits)
  double decode_tokens_per_s = 0;        // tokens after the first / (first -> last token)
  std::vector<TokenLogprob> logprobs{};  // one per token when GenerateConfig::logprobs >= 0
};

// What the loop needs from the vocabulary. A Model provides it; tests fake
// it to drive the state machine without a model.
struct Vocabulary {
  std::uint32_t n_vocab = 0;
  std::function<std::string(Token)> piece{};  // the bytes one generated token adds to the text
  std::function<bool(Token)> is_eog{};
};
// Pieces are Model::detok(token, Detok::Plain). It holds a reference to the model.
Vocabulary vocabulary_of(const Model& model);

// What one on_logits() step produced.
struct Step {
  std::optional<Token> token{};  // the token sampled; absent when the step only finished
  std::string text{};            // text released now: whole UTF-8 characters, no stop-string prefix
  std::optional<TokenLogprob> logprob{};
  bool finished = false;
};

class Generation {
 public:
  enum class Phase {
    Created,   // begin() not called yet
    Prefill,   // prompt tokens left to hand out
    Waiting,   // handed out a Decode that asked for logits; on_logits() next
    Decoding,  // holds a sampled token to hand out
    Done,
  };

  // Throws Error(InvalidArgument) for an empty prompt, a bad sampler
  // config, an empty or non-UTF-8 stop string, or a negative timeout.
  Generation(Vocabulary vocab, std::vector<Token> prompt, GenerateConfig config);
  Generation(const Model& model, std::span<const Token> prompt, const GenerateConfig& config);

  const std::vector<Token>& prompt() const { return prompt_; }
  const GenerateConfig& config() const { return cfg_; }

  // Starts the clock. `cached` leading prompt tokens are already in the KV
  // cache at positions 0..cached-1 (Session::begin_prompt's answer); they
  // are not handed out again. Must be < prompt().size().
  void begin(std::size_t cached);

  // Appends up to `budget` Decodes (0 = no limit) for this sequence to
  // `out`: the next chunk of the prompt, or the token sampled last. The
  // Decode that wants logits is marked `logits`; pass that row to
  // on_logits() after the decode. Appends nothing when waiting for logits
  // or done. Notices cancellation and timeout (then done() turns true and
  // take_text() holds the last text). Returns how many were appended.
  std::size_t next_decodes(std::vector<Decode>& out, std::size_t budget = 0);

  // Feeds the logits row of the Decode marked `logits`: samples, checks
  // stops, and releases text.
  Step on_logits(std::span<const float> logits);

  // Ends the generation from outside (e.g. FinishReason::Length when the
  // context is full). Held-back text is released to take_text().
  void finish(FinishReason reason);

  // Drains text released outside on_logits() (by finish(), or a cancel or
  // timeout noticed in next_decodes()).
  std::string take_text();

  bool done() const { return phase_ == Phase::Done; }
  Phase phase() const { return phase_; }
  // Figures are final once done().
  const GenerateResult& result() const { return res_; }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point now() const { return cfg_.clock ? cfg_.clock() : Clock::now(); }
  bool check_interrupt();  // cancel / timeout: finishes and returns true
  void release_text(std::string_view utf8_complete);
  void emit(std::string_view text);
  void finish_impl(FinishReason reason, bool flush_held);
  std::string drain();

  Vocabulary vocab_;
  std::vector<Token> prompt_;
  GenerateConfig cfg_;
  Sampler sampler_;
  Phase phase_ = Phase::Created;
  std::size_t cursor_ = 0;      // next prompt token to hand out
  Token pending_ = 0;           // sampled, not yet decoded (Phase::Decoding)
  std::vector<Token> history_;  // prompt + generated, for the penalties
  std::string bytes_;           // generated bytes not yet whole UTF-8 characters
  std::string held_;            // whole characters that may still begin a stop string
  std::string outbox_;          // released text not yet handed to the caller
  GenerateResult res_;
  Clock::time_point t_begin_, t_prompt_done_, t_first_, t_last_;
  bool saw_prompt_logits_ = false;
};

// Streams text as it becomes complete UTF-8.
using TextSink = std::function<void(std::string_view)>;

// One sequence, start to finish: prefix reuse through
// Session::begin_prompt, prefill in config.n_batch chunks, then decode until
// a stop. Ends with FinishReason::Length when the session has no free cell
// left. Session errors propagate (see the failure contract above).
GenerateResult generate(const Model& model, Session& session, std::span<const Token> prompt,
                        const GenerateConfig& config, const TextSink& on_text = {});

}  // namespace seam
