// seam run: stream a prompt's continuation to stdout; a summary goes to stderr.
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "default_model.h"
#include "seam/generate.h"
#include "seam/model.h"

namespace seam::cli {

void add_run_command(CLI::App& app, CommandList& list) {
  struct Opts {
    std::string model;
    std::string prompt;
    int n_predict = 256;
    float temp = 0.8f;
    int top_k = 40;
    float top_p = 0.95f;
    std::uint64_t seed = 0;
    int threads = 0;
    std::uint32_t ctx = 0;
    std::uint32_t batch = 512;
    bool parse_special = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("run", "Generate a continuation of a prompt");
  sub->add_option(
      "-m,--model", o->model,
      "GGUF model file (default: the bundled model, " + std::string(kDefaultModelName) + ")");
  sub->add_option("-p,--prompt", o->prompt, "Prompt text; \"\" means BOS only")->required();
  sub->add_option("-n,--n-predict", o->n_predict, "Most tokens to generate (-1: until end)")
      ->capture_default_str();
  sub->add_option("--temp", o->temp, "Sampling temperature; 0 = greedy")->capture_default_str();
  sub->add_option("--top-k", o->top_k, "Keep the K most likely tokens; 0 = off")
      ->capture_default_str();
  sub->add_option("--top-p", o->top_p, "Keep the smallest set with probability mass P; 1 = off")
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "Random seed for sampling")->capture_default_str();
  sub->add_option("-t,--threads", o->threads, "Compute threads; 0 = one per core")
      ->capture_default_str();
  sub->add_option("-c,--ctx-size", o->ctx,
                  "KV cache size in tokens; 0 = the model's training context")
      ->capture_default_str();
  sub->add_option("-b,--batch-size", o->batch, "Most tokens per forward pass during prefill")
      ->capture_default_str()
      ->check(CLI::Range(1u, 65536u));
  sub->add_flag("--parse-special", o->parse_special,
                "Recognise special-token text such as <|im_end|> in the prompt");
  list.emplace_back(sub, [o] {
    LoadOptions lo;
    lo.n_threads = o->threads;
    const std::string path = o->model.empty() ? default_model_path() : o->model;
    auto model = Model::load(path, lo);
    const std::vector<Token> prompt = model->tokenize(o->prompt, true, o->parse_special);
    SessionConfig sc;
    sc.n_ctx = o->ctx ? o->ctx : model->info().n_ctx_train;
    sc.n_batch = o->batch;
    auto session = model->session(sc);
    GenerateConfig gc;
    gc.max_tokens = o->n_predict;
    gc.sampler.temperature = o->temp;
    gc.sampler.top_k = o->top_k;
    gc.sampler.top_p = o->top_p;
    gc.sampler.seed = o->seed;
    GenerateResult r = generate(*model, *session, prompt, gc, [](std::string_view text) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    });
    std::fputc('\n', stdout);
    std::fprintf(stderr,
                 "seam: %zu prompt tokens, %zu generated (%s); prefill %.1f tok/s, decode %.1f "
                 "tok/s\n",
                 r.prompt_tokens, r.completion_tokens,
                 std::string(finish_reason_name(r.finish)).c_str(), r.prefill_tokens_per_s,
                 r.decode_tokens_per_s);
    return 0;
  });
}

}  // namespace seam::cli
