// seam::perplexity — how well a model predicts a text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

#include "seam/model.h"

namespace seam {

struct PerplexityOptions {
  // Window length in tokens; 0 = min(512, the model's training context). A
  // text shorter than one window is scored as a single window of its length.
  std::uint32_t n_ctx = 0;
  CacheType cache_type = CacheType::F16;  // how the session stores K and V
  // Called after each window with the windows done, the windows in all and
  // the perplexity of the windows so far (for a progress line); may be empty.
  std::function<void(std::size_t done, std::size_t total, double ppl)> on_window{};
  // A second model with the same vocabulary, run on the same windows: the
  // result then carries the mean KL divergence KL(P_model || P_compare) of the
  // scored positions (in full float, from both live logits rows). Null = none.
  const Model* compare = nullptr;
};

struct PerplexityResult {
  double ppl = 0;            // exp(nll_per_token)
  double nll_per_token = 0;  // mean negative log-likelihood (nats) of the scored tokens
  std::size_t n_tokens = 0;  // tokens in the text
  std::size_t n_scored = 0;  // tokens whose probability was counted
  std::size_t n_windows = 0;
  std::uint32_t n_ctx = 0;  // window length used
  // Standard error of nll_per_token (sample standard deviation of the scored
  // tokens' NLL / sqrt(n_scored)), and of ppl by the delta method (ppl * that).
  double nll_stderr = 0;
  double ppl_stderr = 0;
  // With PerplexityOptions::compare: mean KL divergence per scored token
  // (nats) and its standard error; 0 otherwise.
  double kl_mean = 0;
  double kl_stderr = 0;
};

// llama.cpp's method: the text is tokenized once and cut into consecutive,
// non-overlapping windows of n_ctx tokens (a tail shorter than a window is
// dropped). For a model that adds BOS, the first token of every window is
// replaced by BOS. Each window is decoded from an empty cache; the first half
// is context only and each token of the second half is scored by the logits of
// the row before it (n_ctx - 1 - n_ctx/2 tokens per window).
// Throws Error(InvalidArgument) when the text has fewer than 2 tokens, or when
// the compare model's vocabulary differs.
PerplexityResult perplexity(const Model& model, std::string_view text,
                            const PerplexityOptions& options = {});

}  // namespace seam
