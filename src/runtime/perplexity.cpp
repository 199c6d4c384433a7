#include "seam/perplexity.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "seam/error.h"
#include "seam/session.h"

namespace seam {

PerplexityResult perplexity(const Model& model, std::string_view text,
                            const PerplexityOptions& options) {
  const std::vector<Token> tokens = model.tokenize(text, /*add_bos=*/false, false);
  // Whether the model's own prompts start with BOS decides the window's first token.
  const std::vector<Token> probe = model.tokenize("", /*add_bos=*/true, false);
  const std::optional<Token> bos = model.bos();
  const bool use_bos = bos && !probe.empty() && probe.front() == *bos;

  PerplexityResult r;
  r.n_tokens = tokens.size();
  std::uint32_t n_ctx = options.n_ctx;
  if (n_ctx == 0) {
    const std::uint32_t train = model.info().n_ctx_train;
    n_ctx = train ? std::min<std::uint32_t>(512, train) : 512;
  }
  if (tokens.size() < n_ctx) n_ctx = static_cast<std::uint32_t>(tokens.size());
  if (n_ctx < 2) {
    throw Error(Errc::InvalidArgument,
                "perplexity needs a text of at least 2 tokens (and a window of at least 2); got " +
                    std::to_string(tokens.size()) + " tokens");
  }
  r.n_ctx = n_ctx;
  const std::size_t first = n_ctx / 2;  // rows before this are context only
  // A window of 2 still scores one token: its first row predicts the second.
  const std::size_t score_from = std::min<std::size_t>(first, n_ctx - 2);

  SessionConfig cfg;
  cfg.n_ctx = n_ctx;
  cfg.n_batch = std::min<std::uint32_t>(n_ctx, 512);
  cfg.cache_type = options.cache_type;
  auto session = model.session(cfg);
  const std::size_t n_vocab = model.info().n_vocab;

  double nll = 0;
  std::vector<Decode> batch(n_ctx);
  for (std::size_t start = 0; start + n_ctx <= tokens.size(); start += n_ctx) {
    session->clear_seq(0);
    for (std::uint32_t j = 0; j < n_ctx; ++j) {
      batch[j].token = (j == 0 && use_bos) ? *bos : tokens[start + j];
      batch[j].pos = static_cast<std::int32_t>(j);
      batch[j].seq = 0;
      batch[j].logits = j >= score_from && j + 1 < n_ctx;
    }
    session->decode(batch);
    for (std::uint32_t j = 0; j < n_ctx; ++j) {
      if (!batch[j].logits) continue;
      const std::span<const float> logits = session->logits(j);
      // log-softmax in double: nll = logsumexp(logits) - logits[target].
      const float mx = *std::max_element(logits.begin(), logits.begin() + n_vocab);
      double sum = 0;
      for (std::size_t v = 0; v < n_vocab; ++v) sum += std::exp(double(logits[v]) - mx);
      const Token target = tokens[start + j + 1];
      nll += std::log(sum) + mx - logits[static_cast<std::size_t>(target)];
      ++r.n_scored;
    }
    ++r.n_windows;
    if (options.on_window)
      options.on_window(r.n_windows, tokens.size() / n_ctx,
                        std::exp(nll / static_cast<double>(r.n_scored)));
  }
  r.nll_per_token = nll / static_cast<double>(r.n_scored);
  r.ppl = std::exp(r.nll_per_token);
  return r;
}

}  // namespace seam
