// seam observe: read a text stream through a model's eyes (docs/observe.md).
// A thin layer over seam::Observer: read input as it arrives, feed it, and
// route the events to JSONL, the terminal view or plain text, and the HTML report.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "commands.h"
#include "generate_options.h"
#include "observe_report.h"
#include "seam/error.h"
#include "seam/model.h"
#include "seam/observe.h"

namespace seam::cli {

namespace {

volatile std::sig_atomic_t g_stop = 0;
extern "C" void on_stop_signal(int) { g_stop = 1; }

struct Opts {
  std::string model;
  std::string compare;
  std::string file;
  std::string input;  // positional: FILE or -
  std::string jsonl, html, debug_log, baseline = "welford", roll = "shift";
  int threads = 0;
  bool mmap = false;
  std::string cache_type = "f16";
  ObserveOptions obs;
  bool no_interject = false;
};

// Writes every event where it belongs.
class Router {
 public:
  Router(const Opts& o, const Model& model) {
    if (o.jsonl == "-") {
      jsonl_ = stdout;
    } else if (!o.jsonl.empty()) {
      jsonl_ = std::fopen(o.jsonl.c_str(), "wb");
      if (!jsonl_)
        throw Error(Errc::Io,
                    "cannot write the JSONL file " + o.jsonl + ": " + std::strerror(errno));
      own_jsonl_ = true;
    }
    if (o.jsonl != "-") {
      const bool tty = isatty(STDOUT_FILENO);
      view_.emplace(stdout, tty ? terminal_colors() : 0, tty);
    }
    if (!o.html.empty()) {
      html_.emplace();
      html_path_ = o.html;
      title_ = "seam observe: " + model.info().name;
    }
  }
  ~Router() {
    if (own_jsonl_) std::fclose(jsonl_);
  }

  void route(const ObserveEvent& e) {
    if (jsonl_) {
      const std::string line = dump_json(event_json(e));
      std::fwrite(line.data(), 1, line.size(), jsonl_);
      std::fputc('\n', jsonl_);
    }
    if (view_) view_->show(e);
    if (html_) html_->add(e);
    if (const auto* t = std::get_if<TokenEvent>(&e)) last_z_ = t->z;
  }
  void flush(const Observer& obs, bool force = false) {
    if (jsonl_) std::fflush(jsonl_);
    if (view_) {
      view_->status(obs.summary(), last_z_, force);
      std::fflush(stdout);
    }
  }
  void close() {
    view_.reset();  // restores the terminal before the summary goes to stderr
    if (html_) html_->write(html_path_, title_);
  }

 private:
  std::FILE* jsonl_ = nullptr;
  bool own_jsonl_ = false;
  std::optional<TerminalView> view_;
  std::optional<HtmlReport> html_;
  std::string html_path_, title_;
  double last_z_ = 0;
};

int run_observe(Opts& o) {
  std::string path = !o.file.empty() ? o.file : o.input;
  if (!o.file.empty() && !o.input.empty())
    throw Error(Errc::InvalidArgument,
                "give the input once: -f FILE or a positional FILE (- = stdin)");
  int fd = STDIN_FILENO;
  if (!path.empty() && path != "-") {
    fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0)
      throw Error(Errc::Io, "cannot read the text file " + path + ": " + std::strerror(errno));
  }
  if (o.baseline == "welford") {
    o.obs.baseline = Baseline::Welford;
  } else if (o.baseline == "ewma") {
    o.obs.baseline = Baseline::Ewma;
  } else {
    throw Error(Errc::InvalidArgument,
                "--baseline must be welford or ewma, not '" + o.baseline + "'");
  }
  if (o.roll == "shift") {
    o.obs.roll = RollMode::Shift;
  } else if (o.roll == "prefill") {
    o.obs.roll = RollMode::Prefill;
  } else {
    throw Error(Errc::InvalidArgument, "--roll must be shift or prefill, not '" + o.roll + "'");
  }
  o.obs.interject = !o.no_interject;
  o.obs.cache_type = parse_cache_type(o.cache_type);
  std::ofstream debug;
  if (!o.debug_log.empty()) {
    debug.open(o.debug_log, std::ios::binary);
    if (!debug) throw Error(Errc::Io, "cannot write the debug log " + o.debug_log);
    o.obs.debug_log = [&debug](const std::string& line) { debug << line << '\n'; };
  }
  ModelOptions mo;
  mo.model = o.model;
  mo.threads = o.threads;
  mo.mmap = o.mmap;
  auto model = load_model(mo);
  std::shared_ptr<const Model> compare;
  if (!o.compare.empty()) {
    LoadOptions lo;
    lo.n_threads = o.threads;
    lo.mmap = o.mmap;
    compare = Model::load(o.compare, lo);
  }
  Observer obs(model, o.obs, compare);
  Router out(o, *model);

  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  std::vector<char> buf(1 << 16);
  auto drain = [&] {
    for (const ObserveEvent& e : obs.take_events()) out.route(e);
    out.flush(obs);
  };
  while (!g_stop) {
    pollfd p{fd, POLLIN, 0};
    // While an interjection runs and no text waits, let it advance; otherwise
    // wake up now and then to keep the status line fresh.
    const int ready = ::poll(&p, 1, obs.busy() ? 0 : 200);
    if (ready < 0 && errno != EINTR)
      throw Error(Errc::Io, std::string("poll: ") + std::strerror(errno));
    if (ready <= 0) {
      if (obs.busy()) obs.step();
      drain();
      continue;
    }
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw Error(Errc::Io, std::string("cannot read the input: ") + std::strerror(errno));
    }
    if (n == 0) break;
    obs.feed(std::string_view(buf.data(), static_cast<std::size_t>(n)));
    drain();
  }
  obs.finish();
  drain();
  out.flush(obs, true);
  out.close();
  if (fd != STDIN_FILENO) ::close(fd);
  const SummaryEvent s = obs.summary();
  if (compare)
    std::fprintf(stderr, "compare: mean KL %.6f +/- %.6f bits/token, Binoculars %.4f\n",
                 s.mean_kl_bits, s.mean_kl_stderr_bits, s.binoculars);
  std::fprintf(stderr,
               "observe: %llu tokens, mean surprisal %.4f bits, perplexity %.4f, %.4f bits/byte, "
               "%llu triggers, %llu interjections, %llu rolls, %.1f tokens/s\n",
               static_cast<unsigned long long>(s.tokens), s.mean_surprisal_bits, s.perplexity,
               s.bits_per_byte, static_cast<unsigned long long>(s.triggers),
               static_cast<unsigned long long>(s.interjections),
               static_cast<unsigned long long>(s.rolls), s.tokens_per_s);
  return g_stop ? 130 : 0;
}

}  // namespace

void add_observe_command(CLI::App& app, CommandList& list) {
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand(
      "observe",
      "Read a text stream through a model: per-token surprisal, triggers, interjections");
  sub->add_option("-m,--model", o->model,
                  "GGUF model file or Hugging Face model directory (default: the bundled model)");
  add_mmap_flag(sub, o->mmap);
  sub->add_option("--compare", o->compare,
                  "A second model with the same tokenizer: per-token KL divergence and "
                  "cross-entropy, and Binoculars scores");
  sub->add_option("-f,--file", o->file,
                  "Text file to observe (- or none: standard input, as it arrives)");
  sub->add_option("input", o->input, "Text file to observe, or - for standard input");
  sub->add_option("--jsonl", o->jsonl, "Write events as JSON lines to FILE (- = stdout)");
  sub->add_option("--html", o->html, "Write a self-contained HTML heat-map report to FILE");
  sub->add_option("--debug-log", o->debug_log,
                  "Log every decode call and trigger decision to FILE");
  sub->add_option("--top-k", o->obs.top_k, "Alternatives reported per token")
      ->capture_default_str();
  sub->add_option("--z", o->obs.z, "z-score above which a trigger fires")->capture_default_str();
  sub->add_option("--z-rearm", o->obs.z_rearm,
                  "The gate re-arms once the z-score falls below this (hysteresis)")
      ->capture_default_str();
  sub->add_option("--span", o->obs.span, "z of the mean surprisal over the last N tokens")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 20));
  sub->add_option("--warmup", o->obs.warmup, "Scored tokens before the first trigger")
      ->capture_default_str();
  sub->add_option("--cooldown", o->obs.cooldown, "Tokens after a trigger before the next")
      ->capture_default_str();
  sub->add_option("--baseline", o->baseline, "welford (all tokens) or ewma (recent tokens)")
      ->capture_default_str();
  sub->add_option("--ewma-window", o->obs.ewma_window, "EWMA span N (alpha = 2/(N+1))")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 30));
  sub->add_option("-c,--ctx-size", o->obs.n_ctx,
                  "Observed context in tokens; 0 = min(4096, training context) less the "
                  "interjection's room. When full, the oldest tokens are dropped")
      ->capture_default_str();
  sub->add_option("--window", o->obs.window, "Tokens kept when the context rolls; 0 = half of it")
      ->capture_default_str();
  sub->add_option("--roll", o->roll,
                  "shift (move the kept tokens' cached keys, no new prefill) or prefill (decode "
                  "the kept tokens again, as from a cold start)")
      ->capture_default_str();
  sub->add_option("-b,--batch-size", o->obs.n_batch, "Most tokens per decode call")
      ->capture_default_str()
      ->check(CLI::Range(1u, 65536u));
  add_cache_type_option(sub, o->cache_type);
  sub->add_option("--interject-tokens", o->obs.interject_tokens, "Most tokens per interjection")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  sub->add_option("--interject-prompt", o->obs.interject_prompt,
                  "What the model is asked after a trigger (default: \"" +
                      std::string(default_interject_prompt()) + "\")");
  sub->add_flag("--no-interject", o->no_interject, "Triggers only, no interjections");
  sub->add_option("--dedup", o->obs.dedup,
                  "Mark an interjection duplicate when its word-bigram overlap with a recent one "
                  "exceeds this (1 = off)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("--seed", o->obs.seed, "Interjection sampler seed")->capture_default_str();
  sub->add_option("-t,--threads", o->threads, "Compute threads; 0 = one per core")
      ->check(CLI::Range(0, 1024));
  list.emplace_back(sub, [o] { return run_observe(*o); });
}

}  // namespace seam::cli
