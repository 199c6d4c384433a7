#include "generate/sampler.h"

#include <algorithm>
#include <cmath>

namespace seam {

Token argmax(std::span<const float> logits) {
  Token best = 0;
  for (std::size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[static_cast<std::size_t>(best)]) best = static_cast<Token>(i);
  }
  return best;
}

Sampler::Sampler(const SamplerConfig& cfg) : cfg_(cfg), rng_(cfg.seed) {}

Token Sampler::sample(std::span<const float> logits) {
  if (cfg_.temperature <= 0.0f) return argmax(logits);
  cand_.clear();
  cand_.reserve(logits.size());
  for (std::size_t i = 0; i < logits.size(); ++i) {
    cand_.push_back({static_cast<Token>(i), logits[i], 0.0f});
  }
  auto by_logit = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  std::size_t n = cand_.size();
  if (cfg_.top_k > 0 && static_cast<std::size_t>(cfg_.top_k) < n) {
    n = static_cast<std::size_t>(cfg_.top_k);
    std::partial_sort(cand_.begin(), cand_.begin() + static_cast<std::ptrdiff_t>(n), cand_.end(),
                      by_logit);
  } else {
    std::sort(cand_.begin(), cand_.end(), by_logit);
  }
  cand_.resize(n);
  // softmax(logit / T) over the kept candidates
  const float max_logit = cand_[0].logit;
  double sum = 0.0;
  for (Candidate& c : cand_) {
    c.p = std::exp((c.logit - max_logit) / cfg_.temperature);
    sum += c.p;
  }
  for (Candidate& c : cand_) c.p = static_cast<float>(c.p / sum);
  // top-p: the smallest prefix whose mass reaches p
  if (cfg_.top_p < 1.0f) {
    double mass = 0.0;
    std::size_t keep = cand_.size();
    for (std::size_t i = 0; i < cand_.size(); ++i) {
      mass += cand_[i].p;
      if (mass >= cfg_.top_p) {
        keep = i + 1;
        break;
      }
    }
    cand_.resize(keep);
    sum = 0.0;
    for (const Candidate& c : cand_) sum += c.p;
  } else {
    sum = 1.0;
  }
  std::uniform_real_distribution<double> uni(0.0, sum);
  const double r = uni(rng_);
  double acc = 0.0;
  for (const Candidate& c : cand_) {
    acc += c.p;
    if (r < acc) return c.id;
  }
  return cand_.back().id;
}

}  // namespace seam
