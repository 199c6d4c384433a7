// Options and rules shared by every subcommand: the model and session, the
// sampler chain and the stops, the thread count, the seed, the default
// context, and writing the product to stdout. Each command adds the options
// to its subcommand and turns them into library configs after parsing, so
// every subcommand keeps the same rules.
#pragma once

#include <CLI/CLI.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "seam/generate.h"
#include "seam/model.h"

namespace seam::cli {

struct ModelOptions {
  std::string model;      // empty: $SEAM_MODEL, else the bundled default model
  int threads = 0;        // 0: one per core (see add_threads_option)
  std::uint32_t ctx = 0;  // 0: default_context(training context)
  std::uint32_t batch = 512;
  std::string cache_type = "f16";  // --cache-type, checked by parse_cache_type
  int gpu_layers = -1;  // llama.cpp's -ngl: accepted, and said to have no effect (CPU build)
  bool mmap = false;    // --mmap: LoadOptions::mmap
};

// -t/--threads with seam's one rule: a given value below 1 is refused at parse
// time; omitted (0) means one per core. Call resolve_threads before using it.
CLI::Option* add_threads_option(CLI::App* sub, int& threads);

// --mmap (LoadOptions::mmap): weights from a map of the file, not read into
// memory; --no-mmap (the default) and --mlock (no effect) as llama.cpp spells them.
void add_mmap_flag(CLI::App* sub, bool& mmap);

// The thread count to hand to the library: 0 stays 0 (one per core); above the
// number of cores it warns on stderr; above kMaxThreadsPerCore per core it is
// capped (with a warning), since more threads than that only slow a CPU down.
inline constexpr int kMaxThreadsPerCore = 4;
int resolve_threads(int requested);

// The context a session gets when -c is not given: the model's training
// context, but at most kDefaultContext (a header may claim millions of tokens;
// llama.cpp's tools default to 4096 too).
inline constexpr std::uint32_t kDefaultContext = 4096;
std::uint32_t default_context(std::uint32_t n_ctx_train);

// Warns on stderr when n_ctx exceeds the training context, naming the RoPE
// scaling the model applies (if any): past it most models degrade.
void warn_context_beyond_training(const Model& model, std::uint32_t n_ctx);

// Throws Error(ContextFull) with the prompt's length, the context size and
// the flag that changes it when `n_prompt` tokens cannot fit in `n_ctx`.
void check_prompt_fits(std::size_t n_prompt, std::uint32_t n_ctx);

struct SamplingOptions {
  int n_predict = 256;
  float temp = 0.8f;
  int top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float typical = 1.0f;
  float repeat_penalty = 1.0f;
  int repeat_last_n = 64;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  std::vector<std::string> logit_bias;  // "ID=BIAS"
  std::string samplers;                 // "penalties;top_k;..." or empty for the default
  std::int64_t seed = -1;               // -1: random (resolve_seed picks one)
  std::vector<std::string> stop;
  double timeout = 0;
  bool ignore_eos = false;
};

void add_model_options(CLI::App* sub, ModelOptions& o);
// --cache-type f16|f32|q8_0 (also used by perplexity, bench, observe and serve),
// with llama.cpp's spellings of the attention settings: -ctk/-ctv (the same
// type) and -fa (no effect). parse_cache_type turns it into a CacheType or
// throws Error(InvalidArgument) with a one-line reason.
void add_cache_type_option(CLI::App* sub, std::string& type);
CacheType parse_cache_type(const std::string& name);
void add_sampling_options(CLI::App* sub, SamplingOptions& o, const std::string& n_predict_help);

// The seed a run uses: `seed` itself when >= 0, a random one for -1 (llama.cpp's
// "random"); anything else is refused. Print it so a run can be repeated.
std::uint64_t resolve_seed(std::int64_t seed);

// Loads the model (-m, else $SEAM_MODEL, else the bundled one; a bad
// $SEAM_MODEL is an error) and opens a session sized by -c/-b.
std::shared_ptr<const Model> load_model(const ModelOptions& o);
std::unique_ptr<Session> open_session(const Model& model, const ModelOptions& o);

// Turns the options into a GenerateConfig; throws Error(InvalidArgument) with
// a one-line reason for any value out of range (checked against the model's
// vocabulary when `n_vocab` > 0). The seed is resolved (a random one for -1)
// into gc.sampler.seed.
GenerateConfig make_generate_config(const SamplingOptions& o, const ModelOptions& m,
                                    std::uint32_t n_vocab);

// Ctrl-C: while generating() is set, SIGINT sets cancel_flag() (the answer
// stops, the program goes on); otherwise it ends the program with status 130.
void install_sigint_handler();
std::atomic<bool>& cancel_flag();
std::atomic<bool>& generating();

// A prefill progress line on stderr when it is a terminal and the prompt
// needs more than one forward pass; nothing otherwise.
PrefillProgress prefill_progress(std::uint32_t n_batch);

// stdout carries the product. write_stdout writes and flushes; a failed write
// (a full disk, /dev/full) throws Error(Io) so the command exits 1 with one
// line on stderr, and a closed pipe (EPIPE) ends the program quietly.
// main() calls check_stdout() after every command, so a command that writes
// with printf still fails on a write error.
void write_stdout(std::string_view text);
void check_stdout();

}  // namespace seam::cli
