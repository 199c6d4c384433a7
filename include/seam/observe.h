// seam::Observer — reads a text stream through a model's eyes (docs/observe.md).
//
// For every token of the text it reports how surprising the token was
// (surprisal, in bits), how uncertain the model was before seeing it (entropy
// of the predicted distribution), the token's rank among the predictions and
// the most likely alternatives. Running statistics turn surprisal into a
// z-score; a gate with warm-up, cool-down and hysteresis turns z-scores into
// triggers; on a trigger the model may say something about the text (an
// *interjection*), generated on a forked copy of the context so that the
// observed stream is never disturbed.
//
//   auto model = seam::Model::load("model.gguf");
//   seam::Observer obs(model, {});
//   while (read(chunk)) {
//     obs.feed(chunk);                       // any split of the text: 1 byte or 1 MB
//     for (const seam::ObserveEvent& e : obs.take_events()) show(e);
//   }
//   obs.finish();                            // commits the tail, ends interjections
//   for (const seam::ObserveEvent& e : obs.take_events()) show(e);  // ... and the summary
//
// Exactness: the tokens are those of tokenizing the whole text at once (the
// last few tokens of the buffer are held back until more text or finish()
// shows they can no longer change), so events do not depend on how the text
// was split into feed() calls, nor on whether interjections run.
//
// Threads: an Observer is used from one thread at a time. The Model may be
// shared with other sessions.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "seam/generate.h"
#include "seam/model.h"
#include "seam/types.h"

namespace seam {

// The statistics a token's z-score is measured against.
enum class Baseline {
  Welford,  // mean and variance of every scored token so far
  Ewma,     // exponentially weighted mean and variance (ObserveOptions::ewma_window)
};

// How the observed context drops its oldest tokens when it is full.
enum class RollMode {
  // Session::drop_positions: the kept tokens' cached keys are rotated to their
  // new positions, nothing is decoded again; they keep what they saw of the
  // dropped text (llama.cpp's context shift). Falls back to Prefill for a
  // model whose keys cannot be moved.
  Shift,
  // The sequence is cleared and BOS + the kept tokens are decoded again: the
  // next tokens are predicted exactly as from a cold start on the kept text,
  // at the cost of one prefill of --window tokens per roll.
  Prefill,
};

// Mirrors the flags of `seam observe` (docs/observe.md).
struct ObserveOptions {
  // Context of the observed stream in tokens; 0 = min(4096, the model's
  // training context) less the interjection's room (its prompt and
  // interject_tokens), whether or not interjections are on. When the stream
  // reaches it, the oldest tokens are dropped (a RollEvent) and observation
  // goes on. Interjections use positions beyond it.
  std::uint32_t n_ctx = 0;
  // Tokens kept at a roll; 0 = half the context.
  std::uint32_t window = 0;
  RollMode roll = RollMode::Shift;
  std::uint32_t n_batch = 512;  // most tokens per decode call (observed + interjection)
  std::uint32_t top_k = 5;      // alternatives reported per token (0 = none)
  // How the sessions store K and V. F16 (the default, as everywhere) rounds
  // each element to 11 significant bits, so the same text fed in other chunk
  // sizes or beside an interjection agrees within that rounding (a few 1e-4
  // bits of surprisal); F32 agrees within float summation order (1e-6 bits).
  CacheType cache_type = CacheType::F16;

  // Statistics and triggers.
  Baseline baseline = Baseline::Welford;
  std::uint32_t ewma_window = 64;  // EWMA span N: alpha = 2 / (N + 1)
  double z = 3.0;                  // a trigger fires when the z-score exceeds this ...
  double z_rearm = 1.0;            // ... and the gate re-arms once it falls below this
  std::uint32_t span = 1;          // z of the mean surprisal over the last `span` tokens
  std::uint32_t warmup = 64;       // scored tokens before the first trigger may fire
  std::uint32_t cooldown = 128;    // tokens after a trigger before the next may fire

  // Interjections.
  bool interject = true;
  std::int32_t interject_tokens = 48;  // most tokens an interjection generates
  // Asked after the text so far; wrapped as a user turn of the model's chat
  // template when it has one, appended as plain text when it has none.
  // Empty = the default (default_interject_prompt()).
  std::string interject_prompt{};
  // An interjection whose word-bigram overlap with one of the last 8 shown
  // ones exceeds this is marked duplicate (|A ∩ B| / min(|A|, |B|)). 1 = off.
  double dedup = 0.6;
  std::uint64_t seed = 0;  // the interjection sampler's seed (plus the trigger's index)
  // The interjection sampler (its seed field is replaced as above).
  SamplerConfig sampler{};

  std::uint32_t compare_window = 64;  // tokens of the windowed Binoculars score

  // Called with one line (no newline) per decode call and per trigger
  // decision, for `--debug-log`. Empty = no log.
  std::function<void(const std::string&)> debug_log{};
};

// The prompt ObserveOptions::interject_prompt defaults to.
std::string_view default_interject_prompt();

struct TokenAlt {
  Token id = 0;
  std::string piece{};  // Model::detok(id, Detok::Text)
  double p = 0;         // probability under the model
};

// One observed token.
struct TokenEvent {
  std::uint64_t i = 0;  // index in the stream, from 0 (BOS is not a stream token)
  Token id = 0;
  std::string piece{};  // the bytes of the input this token covers (may split a UTF-8 character)
  std::uint64_t offset = 0;  // byte offset of `piece` in the input
  // Whether the model predicted this token. False only for the stream's first
  // token when the model adds no BOS: nothing came before it. The fields
  // below are then NaN (surprisal, entropy, z) or 0 (rank) and empty (top).
  bool predicted = true;
  // Whether a word starts here: the piece is not all whitespace and starts with
  // whitespace or follows whitespace (a leading space belongs to its word).
  bool word_start = false;
  double surprisal_bits = 0;    // -log2 p(token | everything before it)
  double entropy_bits = 0;      // entropy of the predicted distribution
  std::uint32_t rank = 0;       // 1 = the most likely token; ties count the lower ids first
  std::vector<TokenAlt> top{};  // the top_k most likely tokens, most likely first
  // With a compare model (same tokenizer), what it thinks of the same position:
  // KL(P || Q) and the cross-entropy -sum P log2 Q, P this model's prediction,
  // Q the compare model's; binoculars: the Binoculars score over the last
  // ObserveOptions::compare_window scored tokens (see SummaryEvent). NaN
  // without a compare model.
  double kl_bits = 0, xent_bits = 0, binoculars = 0;
  double mean = 0, std = 0;  // the baseline before this token
  double z = 0;              // (surprisal - mean) / std; with span > 1, of the span's mean
};

// A trigger fired at token `i`.
struct TriggerEvent {
  std::uint64_t i = 0;
  double z = 0;
  std::uint32_t span = 1;
};

// What the model said about the text after a trigger at token `i`.
struct InterjectionEvent {
  std::uint64_t i = 0;
  std::string text{};
  std::uint32_t tokens = 0;  // generated tokens
  bool duplicate = false;    // too close to a recent interjection (ObserveOptions::dedup)
};

// The context filled: `dropped` tokens were forgotten, the last `kept` were
// prefilled again at the start of the context. The next token is predicted
// from those `kept` tokens only.
struct RollEvent {
  std::uint64_t i = 0;  // index of the first token observed after the roll
  std::uint64_t dropped = 0;
  std::uint64_t kept = 0;
};

// The whole text, emitted once by finish().
struct SummaryEvent {
  std::uint64_t tokens = 0;  // stream tokens
  std::uint64_t scored = 0;  // tokens with a prediction
  std::uint64_t bytes = 0;   // input bytes
  double mean_surprisal_bits = 0;
  double perplexity = 0;     // 2^mean_surprisal_bits = exp(mean NLL in nats)
  double bits_per_byte = 0;  // total surprisal / bytes of the scored tokens
  std::uint64_t words = 0;   // words with at least one scored token (see docs/observe.md)
  double mean_word_surprisal_bits = 0;
  std::uint64_t triggers = 0;
  std::uint64_t interjections = 0;  // shown (duplicates excluded)
  std::uint64_t rolls = 0;
  double tokens_per_s = 0;  // stream tokens / wall time from the first feed() to finish()
  // With a compare model (NaN without): the mean KL divergence, its standard
  // error, and the Binoculars score of the whole text, log PPL / log X-PPL =
  // mean surprisal / mean cross-entropy (Hans et al. 2024, with this model as
  // the observer and the compare model as the performer). The same model twice
  // gives KL 0 and mean surprisal / mean entropy.
  double mean_kl_bits = 0, mean_kl_stderr_bits = 0, binoculars = 0;
};

using ObserveEvent =
    std::variant<TokenEvent, TriggerEvent, InterjectionEvent, RollEvent, SummaryEvent>;

class Observer {
 public:
  // Throws Error(InvalidArgument) for options out of range (z_rearm > z,
  // span 0, window >= n_ctx, ...), Error(Unsupported) for a vocab-only model.
  // `compare` (optional) is a second model with the same tokenizer, run on
  // the same tokens in step: each TokenEvent then carries the KL divergence
  // and cross-entropy between the two predictions (Error(InvalidArgument)
  // when the vocabularies differ).
  Observer(std::shared_ptr<const Model> model, ObserveOptions options,
           std::shared_ptr<const Model> compare = nullptr);
  ~Observer();
  Observer(const Observer&) = delete;
  Observer& operator=(const Observer&) = delete;

  // Appends text and observes every token that can no longer change, in
  // decode calls of up to n_batch tokens (interjections ride in the same
  // calls). Bytes need not end on a UTF-8 character. Throws
  // Error(InvalidArgument) after finish(); Session errors propagate, after
  // which the Observer must be dropped.
  void feed(std::string_view text);

  // Runs one decode call for an interjection in flight while no text is
  // waiting (a caller whose input is idle calls this to let interjections
  // finish). Returns true if it did some work.
  bool step();
  // Whether an interjection is in flight.
  bool busy() const;

  // End of input: observes the held-back tokens, lets a running
  // interjection finish and emits the SummaryEvent. Later feed() calls throw.
  void finish();

  // Drains the events produced so far, in stream order.
  std::vector<ObserveEvent> take_events();

  // Figures so far (final after finish()).
  SummaryEvent summary() const;
  const ObserveOptions& options() const;
  // The context actually used (ObserveOptions::n_ctx resolved).
  std::uint32_t n_ctx() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace seam
