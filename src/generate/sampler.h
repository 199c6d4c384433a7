// Token sampling over one logits row.
#pragma once

#include <random>
#include <span>
#include <vector>

#include "seam/generate.h"

namespace seam {

class Sampler {
 public:
  explicit Sampler(const SamplerConfig& cfg);
  Token sample(std::span<const float> logits);

 private:
  struct Candidate {
    Token id;
    float logit;
    float p;
  };
  SamplerConfig cfg_;
  std::mt19937_64 rng_;
  std::vector<Candidate> cand_;  // reused across calls
};

// argmax, lowest id on ties
Token argmax(std::span<const float> logits);

}  // namespace seam
