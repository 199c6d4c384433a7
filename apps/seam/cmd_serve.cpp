// seam serve: an OpenAI-compatible HTTP server (docs/server.md). Listens
// first, so /health answers 503 while the model loads; SIGINT/SIGTERM stop
// it gracefully (running requests get --grace seconds) with exit status 0.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "commands.h"
#include "default_model.h"
#include "generate_options.h"
#include "seam/cpu.h"
#include "seam/error.h"
#include "seam/model.h"
#include "seam/server.h"
#include "template_choice.h"

namespace seam::cli {
namespace {

// Whether the model keeps a sequence's logits batch-invariant at the avx512
// level (Model::batch_invariant); one that cannot be read says no here, and
// its load reports why.
bool batch_invariant_at_avx512(const ModelOptions& m) {
  try {
    LoadOptions lo;
    lo.mmap = m.mmap;
    return Model::batch_invariant(m.model.empty() ? default_model_path() : m.model, lo, "avx512");
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

void add_serve_command(CLI::App& app, CommandList& list) {
  struct Opts {
    ModelOptions model;
    ServerConfig server;
    std::string template_arg;
    std::string log_format = "text";
    bool no_batch_invariant = false;
  };
  auto o = std::make_shared<Opts>();
  ServerConfig& s = o->server;
  CLI::App* sub =
      app.add_subcommand("serve",
                         "Serve a model over an OpenAI-compatible HTTP API (/v1/chat/completions, "
                         "/v1/completions, /v1/models, ...) with a chat page at /");
  sub->add_option("-m,--model", o->model.model,
                  "GGUF model file or Hugging Face model directory (default: the bundled model, " +
                      std::string(kDefaultModelName) + ")");
  sub->add_option("-t,--threads", o->model.threads, "Compute threads; 0 = one per core")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  add_mmap_flag(sub, o->model.mmap);
  add_cache_type_option(sub, o->model.cache_type);
  sub->add_option("--host", s.host, "Address to listen on")->capture_default_str();
  sub->add_option("--port", s.port, "Port to listen on; 0 = pick a free one (printed on stderr)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  sub->add_option("--alias", s.model_id,
                  "Model id reported by /v1/models and in responses (default: the file name)");
  sub->add_option("--parallel", s.parallel, "Slots: requests generating at once")
      ->capture_default_str()
      ->check(CLI::Range(1u, 256u));
  sub->add_option("-c,--ctx,--ctx-size", s.n_ctx,
                  "KV cache cells shared by all slots; 0 = the model's training context")
      ->capture_default_str();
  sub->add_option("-b,--batch,--batch-size", s.batch,
                  "Most tokens per decode step (prompt chunks plus one token per running "
                  "request); at least --parallel")
      ->capture_default_str()
      ->check(CLI::Range(1u, 65536u));
  sub->add_option("--queue", s.queue, "Requests waiting for a slot; beyond it: 503")
      ->capture_default_str()
      ->check(CLI::Range(0u, 100000u));
  sub->add_option("--timeout", s.timeout_s,
                  "Per-request wall-clock limit in seconds, queue included; 0 = none")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e9));
  sub->add_option("--grace", s.grace_s,
                  "On SIGINT/SIGTERM: seconds running requests get to finish before they are "
                  "cancelled")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  sub->add_option("--api-key", s.api_key,
                  "Require 'Authorization: Bearer KEY' on every route but /health and /")
      ->envname("SEAM_API_KEY");
  sub->add_option("--max-body", s.max_body, "Largest request body in bytes; larger ones get 413")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 32));
  sub->add_option("--template", o->template_arg,
                  "Chat template: a built-in name (chatml, llama3, gemma) or a Jinja file "
                  "(default: the model's own, else chatml)");
  sub->add_option("--log-format", o->log_format, "Access log on stderr: text or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  sub->add_flag("--no-batch-invariant", o->no_batch_invariant,
                "Run the CPU's fastest kernels (AVX-512) even where their logits depend on what "
                "else shares a decode call; by default a CPU above AVX2 runs the avx2 level, "
                "whose kernels keep them batch-invariant, unless the AVX-512 kernels do so for "
                "this model's weights (docs/server.md). SEAM_CPU, when set, decides instead");
  list.emplace_back(sub, [o] {
    // Before anything fixes the kernel level (the first model load does).
    if (!o->no_batch_invariant && std::getenv("SEAM_CPU") == nullptr &&
        __builtin_cpu_supports("avx512f") && !batch_invariant_at_avx512(o->model))
      ::setenv("SEAM_CPU", "avx2", 1);
    o->server.log_json = o->log_format == "json";
    o->model.ctx = o->server.n_ctx;
    o->server.cache_type = parse_cache_type(o->model.cache_type);
    // Signals are taken by one thread with sigwait (every thread started
    // below inherits the mask), so a stop runs outside a signal handler.
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
    signal(SIGPIPE, SIG_IGN);  // a client that went away is a failed write, not a death

    std::unique_ptr<ServerHandle> server = start_server(o->server);
    std::fprintf(stderr, "seam: listening on http://%s:%d\n", o->server.host.c_str(),
                 server->port());
    std::fflush(stderr);
    ServerHandle* handle = server.get();
    std::thread([sigs, handle] {
      int sig = 0;
      sigwait(&sigs, &sig);
      std::fprintf(stderr, "seam: %s: stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
      handle->stop();
    }).detach();

    auto model = load_model(o->model);
    const TemplateChoice tmpl = choose_template(*model, o->template_arg);
    std::vector<std::string> stops = turn_end_stops(*model, tmpl.source);
    server->set_model(model, tmpl.source, std::move(stops));
    std::fprintf(stderr, "seam: serving %s (template %s, %u slots, %s kernels)\n",
                 model->info().name.c_str(), tmpl.name.c_str(), o->server.parallel, cpu_level());
    std::fflush(stderr);
    server->wait();
    std::fprintf(stderr, "seam: stopped\n");
    return 0;
  });
}

}  // namespace seam::cli
