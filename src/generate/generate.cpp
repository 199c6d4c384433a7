// The per-sequence generation state machine and the one-sequence driver.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "generate/utf8.h"
#include "seam/error.h"
#include "seam/generate.h"

namespace seam {

std::string_view finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop:
      return "stop";
    case FinishReason::Length:
      return "length";
    case FinishReason::Timeout:
      return "timeout";
    case FinishReason::Cancelled:
      return "cancelled";
  }
  return "unknown";
}

Vocabulary vocabulary_of(const Model& model) {
  Vocabulary v;
  v.n_vocab = model.info().n_vocab;
  // The lambdas share the model's ownership, as a Session does, so a
  // Generation may outlive the caller's pointer to the model.
  std::shared_ptr<const Model> owner = model.weak_from_this().lock();
  v.piece = [&model, owner](Token t) { return model.detok(t, Detok::Plain); };
  v.is_eog = [&model, owner](Token t) { return model.is_eog(t); };
  return v;
}

namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// log-softmax of the raw row: the chosen token's value and the top `n`.
TokenLogprob logprob_of(std::span<const float> logits, Token chosen, std::size_t n) {
  double mx = -std::numeric_limits<double>::infinity();
  for (float l : logits)
    if (!std::isnan(l)) mx = std::max(mx, static_cast<double>(l));
  double sum = 0;
  for (float l : logits)
    if (!std::isnan(l)) sum += std::exp(static_cast<double>(l) - mx);
  const double log_z = mx + std::log(sum);
  auto lp = [&](Token t) {
    const float l = logits[static_cast<std::size_t>(t)];
    return static_cast<float>(std::isnan(l) ? -std::numeric_limits<double>::infinity()
                                            : static_cast<double>(l) - log_z);
  };
  TokenLogprob out;
  out.token = chosen;
  out.logprob = lp(chosen);
  n = std::min(n, logits.size());
  if (n > 0) {
    std::vector<Token> ids(logits.size());
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<Token>(i);
    auto better = [&](Token a, Token b) {
      const float la = lp(a), lb = lp(b);
      return la > lb || (la == lb && a < b);
    };
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(), better);
    for (std::size_t i = 0; i < n; ++i) out.top.push_back({ids[i], lp(ids[i])});
  }
  return out;
}

GenerateConfig checked(GenerateConfig cfg) {
  for (const std::string& s : cfg.stop) {
    if (s.empty()) throw Error(Errc::InvalidArgument, "a stop string must not be empty");
    if (!utf8_valid(s))
      throw Error(Errc::InvalidArgument, "stop string is not valid UTF-8: it could never match");
  }
  if (!(cfg.timeout_s >= 0) || !std::isfinite(cfg.timeout_s))
    throw Error(Errc::InvalidArgument, "the timeout must be a finite number of seconds >= 0");
  if (cfg.logprobs < -1)
    throw Error(Errc::InvalidArgument, "logprobs must be -1 (off) or the number of alternatives");
  return cfg;
}

}  // namespace

Generation::Generation(Vocabulary vocab, std::vector<Token> prompt, GenerateConfig config)
    : vocab_(std::move(vocab)),
      prompt_(std::move(prompt)),
      cfg_(checked(std::move(config))),
      sampler_(cfg_.sampler) {
  if (prompt_.empty())
    throw Error(Errc::InvalidArgument,
                "the prompt is empty: it needs at least one token (e.g. BOS)");
  if (!vocab_.piece || !vocab_.is_eog)
    throw Error(Errc::InvalidArgument, "the vocabulary needs both piece and is_eog");
  validate(cfg_.sampler, vocab_.n_vocab);
  for (Token t : prompt_)
    if (t < 0 || (vocab_.n_vocab > 0 && static_cast<std::uint32_t>(t) >= vocab_.n_vocab))
      throw Error(Errc::InvalidArgument,
                  "prompt token " + std::to_string(t) + " is outside the vocabulary");
  if (cfg_.ignore_eos) {
    std::vector<Token> eog;
    for (std::uint32_t t = 0; t < vocab_.n_vocab; ++t)
      if (vocab_.is_eog(static_cast<Token>(t))) eog.push_back(static_cast<Token>(t));
    sampler_.ban(std::move(eog));
  }
  history_ = prompt_;
  res_.prompt_tokens = prompt_.size();
}

Generation::Generation(const Model& model, std::span<const Token> prompt,
                       const GenerateConfig& config)
    : Generation(vocabulary_of(model), std::vector<Token>(prompt.begin(), prompt.end()), config) {}

void Generation::begin(std::size_t cached) {
  if (phase_ != Phase::Created) throw Error(Errc::InvalidArgument, "begin() was already called");
  if (cached >= prompt_.size())
    throw Error(Errc::InvalidArgument,
                "cached prompt tokens must be fewer than the prompt's: the last one is decoded "
                "for its logits");
  t_begin_ = now();
  res_.cached_prompt_tokens = cached;
  cursor_ = cached;
  phase_ = Phase::Prefill;
  if (cfg_.max_tokens == 0) finish_impl(FinishReason::Length, true);
}

bool Generation::check_interrupt() {
  if (phase_ == Phase::Done) return true;
  if (cfg_.cancel && cfg_.cancel->load(std::memory_order_relaxed)) {
    finish_impl(FinishReason::Cancelled, true);
    return true;
  }
  if (cfg_.timeout_s > 0 && phase_ != Phase::Created &&
      ms_between(t_begin_, now()) >= cfg_.timeout_s * 1000.0) {
    finish_impl(FinishReason::Timeout, true);
    return true;
  }
  return false;
}

std::size_t Generation::next_decodes(std::vector<Decode>& out, std::size_t budget) {
  if (phase_ == Phase::Created) throw Error(Errc::InvalidArgument, "call begin() first");
  if (phase_ == Phase::Waiting || check_interrupt()) return 0;
  if (budget == 0) budget = std::numeric_limits<std::size_t>::max();
  if (phase_ == Phase::Prefill) {
    const std::size_t n = std::min(budget, prompt_.size() - cursor_);
    for (std::size_t i = 0; i < n; ++i, ++cursor_) {
      const bool last = cursor_ + 1 == prompt_.size();
      out.push_back({prompt_[cursor_], static_cast<std::int32_t>(cursor_), cfg_.seq, last});
    }
    if (cursor_ == prompt_.size()) phase_ = Phase::Waiting;
    return n;
  }
  // Phase::Decoding: the sampled token goes in at the next position.
  const auto pos = static_cast<std::int32_t>(prompt_.size() + res_.tokens.size() - 1);
  out.push_back({pending_, pos, cfg_.seq, true});
  phase_ = Phase::Waiting;
  return 1;
}

Step Generation::on_logits(std::span<const float> logits) {
  if (phase_ != Phase::Waiting)
    throw Error(Errc::InvalidArgument, "on_logits() without a Decode that asked for logits");
  Step step;
  const auto t_now = now();
  if (!saw_prompt_logits_) {
    saw_prompt_logits_ = true;
    t_prompt_done_ = t_now;
  }
  if (vocab_.n_vocab > 0 && logits.size() != vocab_.n_vocab)
    throw Error(Errc::InvalidArgument, "the logits row has " + std::to_string(logits.size()) +
                                           " entries, the vocabulary " +
                                           std::to_string(vocab_.n_vocab));
  if (check_interrupt()) {
    step.text = drain();
    step.finished = true;
    return step;
  }
  const Token tok = sampler_.sample(logits, history_);
  const auto t_sampled = now();
  if (res_.tokens.empty()) {
    t_first_ = t_sampled;
    res_.ttft_ms = ms_between(t_begin_, t_sampled);
  }
  if (vocab_.is_eog(tok) && !cfg_.ignore_eos) {
    finish_impl(FinishReason::Stop, true);
    step.text = drain();
    step.finished = true;
    return step;
  }
  step.token = tok;
  if (cfg_.logprobs >= 0) {
    step.logprob = logprob_of(logits, tok, static_cast<std::size_t>(cfg_.logprobs));
    res_.logprobs.push_back(*step.logprob);
  }
  res_.tokens.push_back(tok);
  history_.push_back(tok);
  t_last_ = t_sampled;
  pending_ = tok;
  phase_ = Phase::Decoding;

  bytes_ += vocab_.piece(tok);
  std::string whole;
  utf8_take_complete(bytes_, whole);
  release_text(whole);
  if (phase_ != Phase::Done && cfg_.max_tokens > 0 &&
      res_.tokens.size() >= static_cast<std::size_t>(cfg_.max_tokens))
    finish_impl(FinishReason::Length, true);
  step.text = drain();
  step.finished = phase_ == Phase::Done;
  return step;
}

// `text` (whole characters) joins the held-back tail; whatever can no longer
// become part of a stop string goes out.
void Generation::release_text(std::string_view text) {
  held_ += text;
  if (cfg_.stop.empty()) {
    emit(held_);
    held_.clear();
    return;
  }
  // Everything before held_ was shown not to start a stop string, so a match
  // starts inside held_. The earliest match wins.
  std::size_t best = std::string::npos;
  const std::string* which = nullptr;
  for (const std::string& s : cfg_.stop) {
    const std::size_t at = held_.find(s);
    if (at != std::string::npos && (at < best || (at == best && s.size() > which->size()))) {
      best = at;
      which = &s;
    }
  }
  if (which) {
    emit(std::string_view(held_).substr(0, best));
    held_.clear();
    res_.stop_string = *which;
    finish_impl(FinishReason::Stop, false);
    return;
  }
  // Hold back the longest tail of held_ that is a proper prefix of some stop
  // string. Stop strings are valid UTF-8, so that tail starts on a character.
  std::size_t keep = 0;
  for (const std::string& s : cfg_.stop) {
    for (std::size_t len = std::min(s.size() - 1, held_.size()); len > keep; --len) {
      if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
        keep = len;
        break;
      }
    }
  }
  emit(std::string_view(held_).substr(0, held_.size() - keep));
  held_.erase(0, held_.size() - keep);
}

void Generation::finish(FinishReason reason) {
  if (phase_ == Phase::Done) return;
  finish_impl(reason, true);
}

void Generation::finish_impl(FinishReason reason, bool flush_held) {
  if (flush_held) {
    // The sequence ended without a stop string, so the held tail and any
    // unfinished character are real output; the latter becomes U+FFFD.
    std::string tail;
    utf8_take_complete(bytes_, tail, true);
    held_ += tail;
    emit(held_);
  }
  held_.clear();
  bytes_.clear();
  res_.finish = reason;
  res_.completion_tokens = res_.tokens.size();
  if (saw_prompt_logits_) {
    const double prefill_ms = ms_between(t_begin_, t_prompt_done_);
    const auto n = static_cast<double>(res_.prompt_tokens - res_.cached_prompt_tokens);
    if (prefill_ms > 0) res_.prefill_tokens_per_s = n * 1000.0 / prefill_ms;
  }
  if (res_.tokens.size() > 1) {
    const double decode_ms = ms_between(t_first_, t_last_);
    if (decode_ms > 0)
      res_.decode_tokens_per_s = static_cast<double>(res_.tokens.size() - 1) * 1000.0 / decode_ms;
  }
  phase_ = Phase::Done;
}

void Generation::emit(std::string_view text) {
  outbox_ += text;
  res_.text += text;
}

std::string Generation::drain() {
  std::string out;
  out.swap(outbox_);
  return out;
}

std::string Generation::take_text() { return drain(); }

GenerateResult generate(const Model& model, Session& session, std::span<const Token> prompt,
                        const GenerateConfig& config, const TextSink& on_text) {
  Generation g(model, prompt, config);
  g.begin(session.begin_prompt(config.seq, g.prompt()));
  auto emit = [&](const std::string& text) {
    if (!text.empty() && on_text) on_text(text);
  };
  std::vector<Decode> batch;
  while (!g.done()) {
    if (g.phase() == Generation::Phase::Decoding && session.free_cells() == 0) {
      g.finish(FinishReason::Length);  // context full: end the answer rather than fail
      break;
    }
    batch.clear();
    g.next_decodes(batch, config.n_batch);
    if (batch.empty()) break;
    const bool prefill = batch.front().pos < static_cast<std::int32_t>(g.prompt().size());
    session.decode(batch);
    if (prefill && config.on_prefill)
      config.on_prefill(static_cast<std::size_t>(batch.back().pos) + 1, g.prompt().size(),
                        g.result().cached_prompt_tokens);
    if (batch.back().logits) emit(g.on_logits(session.logits(batch.size() - 1)).text);
  }
  emit(g.take_text());
  return g.result();
}

}  // namespace seam
