// seam perplexity: how well a model predicts a text file.
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "commands.h"
#include "generate_options.h"
#include "seam/error.h"
#include "seam/model.h"
#include "seam/perplexity.h"

namespace seam::cli {

void add_perplexity_command(CLI::App& app, CommandList& list) {
  struct Opts {
    std::string model;
    std::string compare;
    std::string file;
    std::uint32_t n_ctx = 0;
    int threads = 0;
    bool mmap = false;
    std::string cache_type = "f16";
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("perplexity", "Measure a model's perplexity on a text file");
  sub->add_option("-m,--model", o->model, "GGUF file or Hugging Face model directory")->required();
  add_mmap_flag(sub, o->mmap);
  sub->add_option("-f,--file", o->file, "Text file to score")->required();
  sub->add_option("-c,--ctx,--ctx-size", o->n_ctx,
                  "Window length in tokens; the second half of each window is scored "
                  "(default: min(512, training context))");
  add_threads_option(sub, o->threads);
  add_cache_type_option(sub, o->cache_type);
  sub->add_option("--compare", o->compare,
                  "A second model with the same tokenizer: also report the mean KL divergence "
                  "KL(model || compare) of the scored tokens, from both live logits");
  sub->add_flag("--json", o->json, "Print the result as one JSON object on stdout");
  list.emplace_back(sub, [o] {
    std::ifstream in(o->file, std::ios::binary);
    if (!in) throw Error(Errc::Io, "cannot read the text file " + o->file);
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    LoadOptions lo;
    lo.n_threads = resolve_threads(o->threads);
    lo.mmap = o->mmap;
    auto model = Model::load(o->model, lo);
    std::shared_ptr<const Model> compare;
    if (!o->compare.empty()) compare = Model::load(o->compare, lo);
    PerplexityOptions po;
    po.n_ctx = o->n_ctx;
    po.compare = compare.get();
    po.cache_type = parse_cache_type(o->cache_type);
    if (po.n_ctx) warn_context_beyond_training(*model, po.n_ctx);
    const auto t0 = std::chrono::steady_clock::now();
    auto seconds = [&t0] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    if (isatty(STDERR_FILENO)) {
      po.on_window = [&seconds](std::size_t done, std::size_t total, double ppl) {
        const double eta =
            seconds() / static_cast<double>(done) * static_cast<double>(total - done);
        std::fprintf(stderr,
                     "\r\033[Kseam: perplexity: window %zu/%zu, ppl so far %.4f, ETA %.0f s", done,
                     total, ppl, eta);
        std::fflush(stderr);
      };
    }
    const PerplexityResult r = perplexity(*model, text, po);
    if (isatty(STDERR_FILENO)) std::fputs("\r\033[K", stderr);
    std::fprintf(stderr, "seam: scored %zu windows of %u tokens in %.1f s\n", r.n_windows, r.n_ctx,
                 seconds());
    if (o->json) {
      nlohmann::ordered_json j;
      j["perplexity"] = r.ppl;
      j["perplexity_stderr"] = r.ppl_stderr;
      j["nll_per_token"] = r.nll_per_token;
      j["nll_stderr"] = r.nll_stderr;
      j["tokens"] = r.n_tokens;
      j["scored"] = r.n_scored;
      j["windows"] = r.n_windows;
      j["n_ctx"] = r.n_ctx;
      if (compare) {
        j["kl_mean"] = r.kl_mean;
        j["kl_stderr"] = r.kl_stderr;
      }
      std::printf("%s\n", j.dump().c_str());
      return 0;
    }
    std::printf(
        "perplexity: %.4f +/- %.4f\nnll/token: %.6f +/- %.6f\ntokens: %zu (scored %zu in %zu "
        "windows of %u)\n",
        r.ppl, r.ppl_stderr, r.nll_per_token, r.nll_stderr, r.n_tokens, r.n_scored, r.n_windows,
        r.n_ctx);
    if (compare) std::printf("KL divergence: %.6f +/- %.6f nats/token\n", r.kl_mean, r.kl_stderr);
    return 0;
  });
}

}  // namespace seam::cli
