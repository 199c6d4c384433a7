// The sampler chain: bias, penalties, truncation, temperature, seeded draw.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <unordered_map>
#include <utility>

#include "seam/error.h"
#include "seam/generate.h"

namespace seam {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct StageName {
  SamplerStage stage;
  std::string_view name;
};
constexpr StageName kStageNames[] = {
    {SamplerStage::LogitBias, "logit_bias"},
    {SamplerStage::Penalties, "penalties"},
    {SamplerStage::TopK, "top_k"},
    {SamplerStage::TypicalP, "typical_p"},
    {SamplerStage::TopP, "top_p"},
    {SamplerStage::MinP, "min_p"},
    {SamplerStage::Temperature, "temperature"},
};

bool by_logit(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// by_logit orders the best first, so the best is its "smallest" element.
float top_logit(const std::vector<Candidate>& c) {
  return std::min_element(c.begin(), c.end(), by_logit)->logit;
}

// Sorts candidates into by_logit order. A full vocabulary row comes in id
// order, and there a stable radix sort on the logits' bits gives exactly
// std::sort(by_logit)'s order (ties keep id order) in linear time: the
// sampler sorts a 32k-256k row for every token drawn without top-k, which
// with std::sort cost more than a small model's decode step.
void sort_by_logit(std::vector<Candidate>& c) {
  const std::size_t n = c.size();
  bool radix = n >= 2048;
  for (std::size_t i = 1; radix && i < n; ++i) radix = c[i - 1].id < c[i].id;
  for (std::size_t i = 0; radix && i < n; ++i) radix = !std::isnan(c[i].logit);
  if (!radix) {
    std::sort(c.begin(), c.end(), by_logit);
    return;
  }
  // Key: ascending key = descending logit. -0 and +0 compare equal, so they
  // share a key; the float's bits map to an unsigned order-preserving value.
  std::vector<std::uint32_t> key(n), key2(n);
  std::vector<Candidate> tmp(n);
  for (std::size_t i = 0; i < n; ++i) {
    const float v = c[i].logit == 0.0f ? 0.0f : c[i].logit;
    const auto b = std::bit_cast<std::uint32_t>(v);
    const std::uint32_t ascending = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
    key[i] = ~ascending;
  }
  constexpr int kBits = 11;
  constexpr std::uint32_t kMask = (1u << kBits) - 1;
  std::vector<std::size_t> count(std::size_t{1} << kBits);
  for (int shift = 0; shift < 32; shift += kBits) {
    std::fill(count.begin(), count.end(), 0);
    for (std::size_t i = 0; i < n; ++i) ++count[(key[i] >> shift) & kMask];
    std::size_t at = 0;
    for (std::size_t& k : count) at += std::exchange(k, at);
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t to = count[(key[i] >> shift) & kMask]++;
      key2[to] = key[i];
      tmp[to] = c[i];
    }
    key.swap(key2);
    c.swap(tmp);
  }
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

[[noreturn]] void bad(const std::string& what) { throw Error(Errc::InvalidArgument, what); }

}  // namespace

std::string_view sampler_stage_name(SamplerStage s) {
  for (const auto& n : kStageNames)
    if (n.stage == s) return n.name;
  return "unknown";
}

std::optional<SamplerStage> parse_sampler_stage(std::string_view name) {
  std::string norm(name);
  std::replace(norm.begin(), norm.end(), '-', '_');
  for (const auto& n : kStageNames)
    if (n.name == norm) return n.stage;
  return std::nullopt;
}

std::vector<SamplerStage> default_sampler_order() {
  return {SamplerStage::LogitBias,  SamplerStage::Penalties, SamplerStage::TopK,
          SamplerStage::TypicalP,   SamplerStage::TopP,      SamplerStage::MinP,
          SamplerStage::Temperature};
}

void validate(const SamplerConfig& c, std::uint32_t n_vocab) {
  if (!(c.temperature >= 0.0f) || !std::isfinite(c.temperature))
    bad("temperature must be a finite number >= 0 (0 = greedy), got " + num(c.temperature));
  if (c.top_k < 0) bad("top-k must be >= 0 (0 = off), got " + std::to_string(c.top_k));
  if (!(c.top_p > 0.0f && c.top_p <= 1.0f))
    bad("top-p must be in (0, 1] (1 = off), got " + num(c.top_p));
  if (!(c.min_p >= 0.0f && c.min_p <= 1.0f))
    bad("min-p must be in [0, 1] (0 = off), got " + num(c.min_p));
  if (!(c.typical_p > 0.0f && c.typical_p <= 1.0f))
    bad("typical-p must be in (0, 1] (1 = off), got " + num(c.typical_p));
  if (!(c.repeat_penalty > 0.0f) || !std::isfinite(c.repeat_penalty))
    bad("repeat penalty must be a finite number > 0 (1 = off), got " + num(c.repeat_penalty));
  if (c.repeat_last_n < -1)
    bad("repeat-last-n must be >= -1 (-1 = whole history, 0 = off), got " +
        std::to_string(c.repeat_last_n));
  if (!std::isfinite(c.frequency_penalty)) bad("frequency penalty must be a finite number");
  if (!std::isfinite(c.presence_penalty)) bad("presence penalty must be a finite number");
  for (const auto& [id, bias] : c.logit_bias) {
    if (id < 0 || (n_vocab > 0 && static_cast<std::uint32_t>(id) >= n_vocab))
      bad("logit bias token id " + std::to_string(id) + " is outside the vocabulary" +
          (n_vocab > 0 ? " (0.." + std::to_string(n_vocab - 1) + ")" : std::string()));
    if (std::isnan(bias) || bias == std::numeric_limits<float>::infinity())
      bad("logit bias for token " + std::to_string(id) + " must be a number or -inf");
  }
  bool seen[std::size(kStageNames)] = {};
  bool truncated = false;
  for (SamplerStage s : c.order) {
    const auto i = static_cast<std::size_t>(s);
    if (i >= std::size(seen)) bad("unknown sampler stage in the sampler order");
    if (seen[i]) bad("sampler stage '" + std::string(sampler_stage_name(s)) + "' is listed twice");
    seen[i] = true;
    // Bias and penalties look tokens up by id in the full row.
    if ((s == SamplerStage::LogitBias || s == SamplerStage::Penalties) && truncated)
      bad("sampler stage '" + std::string(sampler_stage_name(s)) +
          "' must come before top_k, typical_p, top_p and min_p in the sampler order");
    if (s == SamplerStage::TopK || s == SamplerStage::TypicalP || s == SamplerStage::TopP ||
        s == SamplerStage::MinP)
      truncated = true;
  }
}

Token argmax(std::span<const float> logits) {
  std::size_t best = logits.size();
  for (std::size_t i = 0; i < logits.size(); ++i) {
    if (std::isnan(logits[i])) continue;  // a NaN is nobody's maximum
    if (best == logits.size() || logits[i] > logits[best]) best = i;
  }
  if (best == logits.size())
    throw Error(Errc::InvalidArgument, logits.empty() ? "the logits row is empty"
                                                      : "every logit in the row is NaN");
  return static_cast<Token>(best);
}

Sampler::Sampler(SamplerConfig cfg) : cfg_(std::move(cfg)), rng_(cfg_.seed) { validate(cfg_); }

void Sampler::ban(std::vector<Token> ids) { banned_ = std::move(ids); }

float Sampler::run_chain(std::span<const float> logits, std::span<const Token> recent) {
  const std::size_t n_vocab = logits.size();
  if (n_vocab == 0) bad("the logits row is empty");
  cand_.resize(n_vocab);
  // NaN would break the sort's ordering; it can never be chosen anyway.
  for (std::size_t i = 0; i < n_vocab; ++i)
    cand_[i] = {static_cast<Token>(i), std::isnan(logits[i]) ? kNegInf : logits[i]};
  sorted_ = false;
  // Bias and penalties index cand_ by id: validate() puts them before every
  // stage that reorders or drops candidates, and greedy mode runs only them.
  const bool greedy = cfg_.temperature == 0.0f;

  for (SamplerStage stage : cfg_.order) {
    if (greedy && stage != SamplerStage::LogitBias && stage != SamplerStage::Penalties) continue;
    switch (stage) {
      case SamplerStage::LogitBias: {
        for (const auto& [id, bias] : cfg_.logit_bias) {
          if (id < 0 || static_cast<std::size_t>(id) >= n_vocab)
            bad("logit bias token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                std::to_string(n_vocab - 1) + ")");
          cand_[static_cast<std::size_t>(id)].logit += bias;
        }
        for (Token id : banned_)
          if (id >= 0 && static_cast<std::size_t>(id) < n_vocab)
            cand_[static_cast<std::size_t>(id)].logit = kNegInf;
        break;
      }
      case SamplerStage::Penalties: {
        const bool off = cfg_.repeat_last_n == 0 ||
                         (cfg_.repeat_penalty == 1.0f && cfg_.frequency_penalty == 0.0f &&
                          cfg_.presence_penalty == 0.0f);
        if (off) break;
        std::span<const Token> window = recent;
        if (cfg_.repeat_last_n > 0 && window.size() > static_cast<std::size_t>(cfg_.repeat_last_n))
          window = window.last(static_cast<std::size_t>(cfg_.repeat_last_n));
        std::unordered_map<Token, int> count;
        for (Token t : window)
          if (t >= 0 && static_cast<std::size_t>(t) < n_vocab) ++count[t];
        for (const auto& [id, c] : count) {
          float& l = cand_[static_cast<std::size_t>(id)].logit;
          // Dividing a positive logit and multiplying a negative one both make
          // the token less likely, whatever its sign.
          l = l > 0 ? l / cfg_.repeat_penalty : l * cfg_.repeat_penalty;
          l -= static_cast<float>(c) * cfg_.frequency_penalty + cfg_.presence_penalty;
        }
        break;
      }
      case SamplerStage::TopK: {
        if (cfg_.top_k <= 0) break;
        const auto k = std::min(static_cast<std::size_t>(cfg_.top_k), cand_.size());
        if (!sorted_) {
          std::partial_sort(cand_.begin(), cand_.begin() + static_cast<std::ptrdiff_t>(k),
                            cand_.end(), by_logit);
        }
        cand_.resize(k);
        sorted_ = true;
        break;
      }
      case SamplerStage::TypicalP: {
        if (cfg_.typical_p >= 1.0f || cand_.size() < 2) break;
        // p_i = softmax(logits); H = -sum p log p; keep the tokens whose
        // surprisal -log p_i is closest to H until their mass reaches typical_p.
        const float mx = top_logit(cand_);
        std::vector<double> p(cand_.size());
        double sum = 0;
        for (std::size_t i = 0; i < cand_.size(); ++i) sum += p[i] = std::exp(cand_[i].logit - mx);
        double entropy = 0;
        for (double& v : p) {
          v /= sum;
          if (v > 0) entropy -= v * std::log(v);
        }
        std::vector<std::size_t> idx(cand_.size());
        std::vector<double> shift(cand_.size());
        for (std::size_t i = 0; i < cand_.size(); ++i) {
          idx[i] = i;
          shift[i] = p[i] > 0 ? std::fabs(-std::log(p[i]) - entropy)
                              : std::numeric_limits<double>::infinity();
        }
        std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
          return shift[a] < shift[b] || (shift[a] == shift[b] && cand_[a].id < cand_[b].id);
        });
        double mass = 0;
        std::size_t keep = idx.size();
        for (std::size_t i = 0; i < idx.size(); ++i) {
          mass += p[idx[i]];
          if (mass >= cfg_.typical_p) {
            keep = i + 1;
            break;
          }
        }
        std::vector<Candidate> kept;
        kept.reserve(keep);
        for (std::size_t i = 0; i < keep; ++i) kept.push_back(cand_[idx[i]]);
        std::sort(kept.begin(), kept.end(), by_logit);
        cand_ = std::move(kept);
        sorted_ = true;
        break;
      }
      case SamplerStage::TopP: {
        if (cfg_.top_p >= 1.0f) break;
        if (!sorted_) sort_by_logit(cand_);
        sorted_ = true;
        const float mx = cand_[0].logit;
        double sum = 0;
        for (const Candidate& c : cand_) sum += std::exp(static_cast<double>(c.logit - mx));
        double mass = 0;
        std::size_t keep = cand_.size();
        for (std::size_t i = 0; i < cand_.size(); ++i) {
          mass += std::exp(static_cast<double>(cand_[i].logit - mx)) / sum;
          if (mass >= cfg_.top_p) {
            keep = i + 1;
            break;
          }
        }
        cand_.resize(keep);
        break;
      }
      case SamplerStage::MinP: {
        if (cfg_.min_p <= 0.0f) break;
        // p_i >= min_p * p_max  <=>  logit_i >= logit_max + log(min_p)
        const float mx = top_logit(cand_);
        const double threshold =
            static_cast<double>(mx) + std::log(static_cast<double>(cfg_.min_p));
        std::erase_if(cand_, [&](const Candidate& c) { return c.logit < threshold; });
        break;
      }
      case SamplerStage::Temperature: {
        for (Candidate& c : cand_) c.logit /= cfg_.temperature;
        break;
      }
    }
  }
  if (greedy) {
    Candidate best = cand_[0];
    for (const Candidate& c : cand_)
      if (by_logit(c, best)) best = c;
    cand_.assign(1, best);
    sorted_ = true;
  }
  // Without a truncating stage the row stays in id order: a draw walks the
  // candidates in any order, and sorting a full row for every token was a
  // fifth of seam serve's CPU at 8 streams (32k vocabulary). candidates()
  // sorts what it returns.
  const float best = cand_.empty() ? kNegInf : sorted_ ? cand_[0].logit : top_logit(cand_);
  if (best == kNegInf)
    bad("every token has been banned (logit bias -inf) or the logits are not numbers");
  return best;
}

std::vector<Candidate> Sampler::candidates(std::span<const float> logits,
                                           std::span<const Token> recent) {
  run_chain(logits, recent);
  if (!sorted_) sort_by_logit(cand_);
  sorted_ = true;
  return cand_;
}

Token Sampler::sample(std::span<const float> logits, std::span<const Token> recent) {
  const double mx = run_chain(logits, recent);
  if (cand_.size() == 1) return cand_[0].id;
  // Each candidate's weight once: the walk below reuses them (in id order it
  // goes half the row on average).
  weight_.resize(cand_.size());
  double sum = 0;
  for (std::size_t i = 0; i < cand_.size(); ++i)
    sum += weight_[i] = std::exp(static_cast<double>(cand_[i].logit) - mx);
  // u in [0, 1) from the top 53 bits: the same on every standard library,
  // unlike std::uniform_real_distribution.
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  const double r = u * sum;
  double acc = 0;
  // u * sum can round up to sum itself: then the last candidate with any
  // weight (in id order the last one may be banned, e.g. an ignored EOS).
  Token last = cand_[0].id;
  for (std::size_t i = 0; i < cand_.size(); ++i) {
    if (weight_[i] > 0) last = cand_[i].id;
    acc += weight_[i];
    if (r < acc) return cand_[i].id;
  }
  return last;
}

}  // namespace seam
