#include "seam/perplexity.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "seam/error.h"
#include "seam/session.h"

namespace seam {

PerplexityResult perplexity(const Model& model, std::string_view text,
                            const PerplexityOptions& options) {
  // As llama.cpp: the text with the model's own special tokens (a leading BOS
  // where its prompts start with one), so the first window scores the text
  // from its first token on, and every later window starts with BOS in place
  // of the token there.
  const std::vector<Token> tokens = model.tokenize(text, /*add_bos=*/true, false);
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
  std::unique_ptr<Session> cmp;
  if (options.compare) {
    if (options.compare->info().n_vocab != model.info().n_vocab ||
        options.compare->tokenize(text.substr(0, 4096), false, false) !=
            model.tokenize(text.substr(0, 4096), false, false))
      throw Error(Errc::InvalidArgument,
                  "the compare model tokenizes the text differently: KL divergence needs two "
                  "models that share a tokenizer");
    cmp = options.compare->session(cfg);
  }
  const std::size_t n_windows = tokens.size() / n_ctx;

  // Sums in double: the mean and the sample variance for the standard errors.
  double nll = 0, nll2 = 0, kl = 0, kl2 = 0;
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
    if (cmp) {
      cmp->clear_seq(0);
      cmp->decode(batch);
    }
    for (std::uint32_t j = 0; j < n_ctx; ++j) {
      if (!batch[j].logits) continue;
      const std::span<const float> logits = session->logits(j);
      // log-softmax in double: nll = logsumexp(logits) - logits[target].
      const float mx = *std::max_element(logits.begin(), logits.begin() + n_vocab);
      double sum = 0;
      for (std::size_t v = 0; v < n_vocab; ++v) sum += std::exp(double(logits[v]) - mx);
      const double log_z = std::log(sum) + mx;
      const Token target = tokens[start + j + 1];
      const double x = log_z - logits[static_cast<std::size_t>(target)];
      nll += x;
      nll2 += x * x;
      if (cmp) {
        // KL(P || Q) = sum p (log p - log q), both log-softmaxes in double.
        const std::span<const float> q = cmp->logits(j);
        const float qmx = *std::max_element(q.begin(), q.begin() + n_vocab);
        double qsum = 0;
        for (std::size_t v = 0; v < n_vocab; ++v) qsum += std::exp(double(q[v]) - qmx);
        const double q_log_z = std::log(qsum) + qmx;
        double d = 0;
        for (std::size_t v = 0; v < n_vocab; ++v) {
          const double lp = logits[v] - log_z;
          d += std::exp(lp) * (lp - (q[v] - q_log_z));
        }
        kl += d;
        kl2 += d * d;
      }
      ++r.n_scored;
    }
    ++r.n_windows;
    if (options.on_window)
      options.on_window(r.n_windows, n_windows, std::exp(nll / static_cast<double>(r.n_scored)));
  }
  const auto n = static_cast<double>(r.n_scored);
  // Standard error of a mean from the sums: sqrt((E[x^2] - E[x]^2) / (n - 1)).
  auto stderr_of = [n](double s, double s2) {
    if (n < 2) return 0.0;
    const double m = s / n;
    return std::sqrt(std::max(0.0, (s2 / n - m * m) / (n - 1)));
  };
  r.nll_per_token = nll / n;
  r.ppl = std::exp(r.nll_per_token);
  r.nll_stderr = stderr_of(nll, nll2);
  r.ppl_stderr = r.ppl * r.nll_stderr;
  if (cmp) {
    r.kl_mean = kl / n;
    r.kl_stderr = stderr_of(kl, kl2);
  }
  return r;
}

}  // namespace seam
