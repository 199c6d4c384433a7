#include "generate_options.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <random>

#include "default_model.h"
#include "seam/cpu.h"
#include "seam/error.h"

namespace seam::cli {

namespace {
[[noreturn]] void bad(const std::string& what) { throw Error(Errc::InvalidArgument, what); }
}  // namespace

void add_model_options(CLI::App* sub, ModelOptions& o) {
  sub->add_option("-m,--model", o.model,
                  "GGUF model file or Hugging Face model directory (default: $SEAM_MODEL, else the "
                  "bundled model, " +
                      std::string(kDefaultModelName) + ")");
  add_threads_option(sub, o.threads);
  sub->add_option("-c,--ctx-size", o.ctx,
                  "KV cache size in tokens (default: the model's training context, at most " +
                      std::to_string(kDefaultContext) + ")");
  sub->add_option("-b,--batch-size", o.batch, "Most prompt tokens per forward pass (prefill)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 65536u));
  sub->add_option("--n-gpu-layers,--gpu-layers", o.gpu_layers,
                  "llama.cpp's -ngl; accepted, but this build runs on the CPU only");
  add_cache_type_option(sub, o.cache_type);
  add_mmap_flag(sub, o.mmap);
}

void add_mmap_flag(CLI::App* sub, bool& mmap) {
  sub->add_flag("--mmap,!--no-mmap", mmap,
                "Serve the weights from a memory map of the file instead of reading them into "
                "memory: opens at once and shares the page cache, but decodes slower "
                "(--no-mmap, llama.cpp's spelling of the default, reads them)");
  sub->add_flag_callback(
      "--mlock",
      [] {
        std::fprintf(stderr,
                     "seam: note: --mlock has no effect: seam does not lock the weights "
                     "in RAM\n");
      },
      "llama.cpp's --mlock; accepted, and said to have no effect");
}

void add_cache_type_option(CLI::App* sub, std::string& type) {
  sub->add_option("--cache-type", type,
                  "How the KV cache stores keys and values: f16 (half the memory), f32 "
                  "(exactly as computed) or q8_0 (int8 blocks: about a quarter of f32; the "
                  "head size must be a multiple of 32)")
      ->capture_default_str();
  // llama.cpp's -ctk / -ctv (main.cpp respells them): seam keeps keys and
  // values in one type, so the two may not differ.
  auto given = std::make_shared<std::array<std::string, 2>>();
  for (int kv = 0; kv < 2; ++kv) {
    const std::string name = kv == 0 ? "--cache-type-k" : "--cache-type-v";
    sub->add_option_function<std::string>(
        name,
        [&type, given, kv](const std::string& value) {
          (*given)[kv] = value;
          const std::string& other = (*given)[1 - kv];
          if (!other.empty() && other != value) {
            throw CLI::ValidationError(
                "--cache-type-k " + (*given)[0] + " and --cache-type-v " + (*given)[1] +
                " differ, but seam keeps keys and values in one type: give one --cache-type");
          }
          type = value;
        },
        "llama.cpp's -ctk / -ctv: the same as --cache-type (keys and values share it)");
  }
  // llama.cpp's -fa [on|off|auto]: attention here always runs in tiles with an
  // online softmax, which is what flash attention is.
  sub->add_option_function<std::string>(
         "--flash-attn",
         [](const std::string&) {
           std::fprintf(stderr,
                        "seam: note: --flash-attn has no effect: seam always computes "
                        "attention in tiles with an online softmax\n");
         },
         "llama.cpp's -fa; accepted, and said to have no effect (attention is always tiled)")
      ->expected(0, 1);
}

CacheType parse_cache_type(const std::string& name) {
  if (name == "f16") return CacheType::F16;
  if (name == "f32") return CacheType::F32;
  if (name == "q8_0") return CacheType::Q8_0;
  throw Error(Errc::InvalidArgument, "--cache-type must be f16, f32 or q8_0, got '" + name + "'");
}

void add_sampling_options(CLI::App* sub, SamplingOptions& o, const std::string& n_predict_help) {
  sub->add_option("-n,--n-predict", o.n_predict, n_predict_help)->capture_default_str();
  sub->add_option("--temp,--temperature", o.temp, "Sampling temperature; 0 = greedy (argmax)")
      ->capture_default_str();
  sub->add_option("--top-k", o.top_k, "Keep the K most likely tokens; 0 = off")
      ->capture_default_str();
  sub->add_option("--top-p", o.top_p,
                  "Keep the smallest set of tokens with probability mass P, in (0,1]; 1 = off")
      ->capture_default_str();
  sub->add_option("--min-p", o.min_p,
                  "Drop tokens less likely than P times the most likely one, in [0,1]; 0 = off")
      ->capture_default_str();
  sub->add_option("--typical", o.typical, "Locally typical sampling with mass P, in (0,1]; 1 = off")
      ->capture_default_str();
  sub->add_option("--repeat-penalty", o.repeat_penalty,
                  "Penalise tokens seen in the last --repeat-last-n tokens (> 0; 1 = off)")
      ->capture_default_str();
  sub->add_option("--repeat-last-n", o.repeat_last_n,
                  "Tokens the penalties look back over, prompt included; 0 = off, -1 = all")
      ->capture_default_str();
  sub->add_option("--presence-penalty", o.presence_penalty,
                  "Subtract this from the logit of every token seen in the window")
      ->capture_default_str();
  sub->add_option("--frequency-penalty", o.frequency_penalty,
                  "Subtract this times the count of each token in the window")
      ->capture_default_str();
  sub->add_option("--logit-bias", o.logit_bias,
                  "ID=BIAS: add BIAS to token ID's logit (-inf bans it); repeatable")
      ->take_all();
  sub->add_option("--samplers", o.samplers,
                  "Sampler order, ';'-separated: logit_bias;penalties;top_k;typical_p;top_p;"
                  "min_p;temperature (default: that order); a stage left out is skipped");
  sub->add_option("-s,--seed", o.seed,
                  "Random seed for sampling; -1 = a random one (default; the summary prints it)")
      ->capture_default_str();
  sub->add_option("--stop,-r,--reverse-prompt", o.stop,
                  "Stop when this text is generated (not printed); repeatable")
      ->take_all();
  sub->add_option("--timeout", o.timeout, "Stop after this many seconds of wall clock; 0 = none")
      ->capture_default_str();
  sub->add_flag("--ignore-eos", o.ignore_eos,
                "Never stop on an end-of-generation token (they are banned instead)");
}

CLI::Option* add_threads_option(CLI::App* sub, int& threads) {
  return sub
      ->add_option("-t,--threads", threads,
                   "Compute threads, at least 1 (default: one per core; more than the cores "
                   "warns, more than " +
                       std::to_string(kMaxThreadsPerCore) + " per core is capped)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            long n = 0;
            try {
              std::size_t used = 0;
              n = std::stol(v, &used);
              if (used != v.size()) return "wants a whole number, got '" + v + "'";
            } catch (const std::exception&) {
              return "wants a whole number, got '" + v + "'";
            }
            if (n < 1) return "must be at least 1, got " + v;
            return {};
          },
          "INT>=1", "threads"));
}

int resolve_threads(int requested) {
  if (requested == 0) return 0;
  if (requested < 0) bad("--threads must be at least 1, got " + std::to_string(requested));
  const int cores = physical_cores();
  const int cap = cores * kMaxThreadsPerCore;
  if (requested > cap) {
    std::fprintf(stderr,
                 "seam: warning: --threads %d is far more than this machine's %d cores; "
                 "using %d\n",
                 requested, cores, cap);
    return cap;
  }
  if (requested > cores) {
    std::fprintf(stderr,
                 "seam: warning: --threads %d is more than this machine's %d cores; "
                 "expect it to run slower than with -t %d\n",
                 requested, cores, cores);
  }
  return requested;
}

std::uint32_t default_context(std::uint32_t n_ctx_train) {
  return n_ctx_train == 0 ? kDefaultContext : std::min(n_ctx_train, kDefaultContext);
}

void warn_context_beyond_training(const Model& model, std::uint32_t n_ctx) {
  const ModelInfo& info = model.info();
  if (info.n_ctx_train == 0 || n_ctx <= info.n_ctx_train) return;
  std::fprintf(stderr,
               "seam: warning: the context (%u tokens) is longer than the %u the model was "
               "trained on (RoPE scaling: %s); past %u tokens the output may degrade\n",
               n_ctx, info.n_ctx_train, info.rope_scaling.c_str(), info.n_ctx_train);
}

void check_prompt_fits(std::size_t n_prompt, std::uint32_t n_ctx) {
  if (n_prompt < n_ctx) return;  // one cell is left for the first generated token
  throw Error(Errc::ContextFull, "the prompt is " + std::to_string(n_prompt) +
                                     " tokens but the context holds " + std::to_string(n_ctx) +
                                     "; raise it with -c (e.g. -c " +
                                     std::to_string(n_prompt + 256) + ") or shorten the prompt");
}

std::uint64_t resolve_seed(std::int64_t seed) {
  if (seed >= 0) return static_cast<std::uint64_t>(seed);
  if (seed != -1) bad("--seed must be >= 0, or -1 for a random seed; got " + std::to_string(seed));
  std::random_device rd;
  // Below 2^53 so the seed survives a round trip through JSON readers that use doubles.
  return ((std::uint64_t{rd()} << 32) | rd()) & ((std::uint64_t{1} << 53) - 1);
}

std::shared_ptr<const Model> load_model(const ModelOptions& o) {
  LoadOptions lo;
  lo.n_threads = resolve_threads(o.threads);
  lo.mmap = o.mmap;
  if (o.gpu_layers >= 0)
    std::fprintf(stderr,
                 "seam: note: --n-gpu-layers has no effect: this build runs on the CPU only\n");
  return Model::load(o.model.empty() ? default_model_path() : o.model, lo);
}

std::unique_ptr<Session> open_session(const Model& model, const ModelOptions& o) {
  SessionConfig sc;
  sc.n_ctx = o.ctx ? o.ctx : default_context(model.info().n_ctx_train);
  sc.n_batch = o.batch;
  sc.cache_type = parse_cache_type(o.cache_type);
  warn_context_beyond_training(model, sc.n_ctx);
  return model.session(sc);
}

namespace {

std::pair<Token, float> parse_bias(const std::string& s) {
  const auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
    bad("--logit-bias wants ID=BIAS (e.g. 13=-1.5 or 2=-inf), got '" + s + "'");
  const std::string id_text = s.substr(0, eq), bias_text = s.substr(eq + 1);
  char* end = nullptr;
  errno = 0;
  const long id = std::strtol(id_text.c_str(), &end, 10);
  if (*end || errno || id < 0 || id > std::numeric_limits<Token>::max())
    bad("--logit-bias: '" + id_text + "' is not a token id");
  float bias;
  if (bias_text == "-inf") {
    bias = -std::numeric_limits<float>::infinity();
  } else {
    errno = 0;
    bias = std::strtof(bias_text.c_str(), &end);
    if (*end || errno || !std::isfinite(bias))
      bad("--logit-bias: '" + bias_text + "' is not a number (or -inf)");
  }
  return {static_cast<Token>(id), bias};
}

}  // namespace

GenerateConfig make_generate_config(const SamplingOptions& o, const ModelOptions& m,
                                    std::uint32_t n_vocab) {
  parse_cache_type(m.cache_type);  // refused before the model loads
  GenerateConfig gc;
  gc.max_tokens = o.n_predict;
  if (o.n_predict < -1)
    bad("-n must be >= -1 (-1: until end of generation), got " + std::to_string(o.n_predict));
  SamplerConfig& s = gc.sampler;
  s.temperature = o.temp;
  s.top_k = o.top_k;
  s.top_p = o.top_p;
  s.min_p = o.min_p;
  s.typical_p = o.typical;
  s.repeat_penalty = o.repeat_penalty;
  s.repeat_last_n = o.repeat_last_n;
  s.presence_penalty = o.presence_penalty;
  s.frequency_penalty = o.frequency_penalty;
  s.seed = resolve_seed(o.seed);
  for (const std::string& b : o.logit_bias) s.logit_bias.push_back(parse_bias(b));
  if (!o.samplers.empty()) {
    s.order.clear();
    std::string name;
    auto flush = [&] {
      if (name.empty()) return;
      auto st = parse_sampler_stage(name);
      if (!st)
        bad("--samplers: unknown stage '" + name +
            "' (known: logit_bias, penalties, top_k, typical_p, top_p, min_p, temperature)");
      s.order.push_back(*st);
      name.clear();
    };
    for (char c : o.samplers) {
      if (c == ';' || c == ',')
        flush();
      else if (c != ' ')
        name += c;
    }
    flush();
  }
  validate(s, n_vocab);
  gc.stop = o.stop;
  gc.ignore_eos = o.ignore_eos;
  if (!(o.timeout >= 0) || !std::isfinite(o.timeout))
    bad("--timeout must be a number of seconds >= 0 (0 = none)");
  gc.timeout_s = o.timeout;
  gc.n_batch = m.batch;
  return gc;
}

namespace {
std::atomic<bool> g_cancel{false};
std::atomic<bool> g_generating{false};
static_assert(std::atomic<bool>::is_always_lock_free);  // touched from a signal handler

extern "C" void on_sigint(int) {
  if (g_generating.load()) {
    g_cancel.store(true);
  } else {
    const char nl = '\n';
    (void)!write(STDERR_FILENO, &nl, 1);
    _exit(130);
  }
}
}  // namespace

void install_sigint_handler() {
  struct sigaction sa = {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  // Ctrl-C only cancels the answer: a write to stdout it interrupts (a full pipe) must
  // resume, not fail with EINTR and end the program as a write error.
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
}
std::atomic<bool>& cancel_flag() { return g_cancel; }
std::atomic<bool>& generating() { return g_generating; }

PrefillProgress prefill_progress(std::uint32_t n_batch) {
  if (!isatty(STDERR_FILENO)) return {};
  return [n_batch](std::size_t done, std::size_t total, std::size_t cached) {
    if (total - cached <= n_batch) return;  // one pass: nothing to watch
    if (done < total) {
      std::fprintf(stderr, "\rseam: prefill %zu/%zu tokens", done, total);
    } else {
      std::fputs("\r\033[K", stderr);  // clear the line before the answer
    }
    std::fflush(stderr);
  };
}

[[noreturn]] void stdout_failed(int err) {
  // A reader that went away (`seam run ... | head`) is not an error of ours.
  if (err == EPIPE) _exit(141);  // 128 + SIGPIPE, as a shell reports a piped writer
  // err is 0 when an earlier buffered write failed and its errno is gone.
  throw Error(Errc::Io, err ? std::string("cannot write to standard output: ") + std::strerror(err)
                            : std::string("cannot write to standard output (disk full?)"));
}

void write_stdout(std::string_view text) {
  errno = 0;
  if (!text.empty() && std::fwrite(text.data(), 1, text.size(), stdout) != text.size())
    stdout_failed(errno);
  if (std::fflush(stdout) != 0) stdout_failed(errno);
}

void check_stdout() {
  errno = 0;
  std::cout.flush();
  if (std::fflush(stdout) != 0 || std::ferror(stdout) || std::cout.fail()) stdout_failed(errno);
}

}  // namespace seam::cli
