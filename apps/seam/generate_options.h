// Options shared by `seam run` and `seam chat`: the model and session, the
// sampler chain and the stops. Each command adds them to its subcommand and
// turns them into library configs after parsing.
#pragma once

#include <CLI/CLI.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "seam/generate.h"
#include "seam/model.h"

namespace seam::cli {

struct ModelOptions {
  std::string model;  // empty: the bundled default model
  int threads = 0;
  std::uint32_t ctx = 0;  // 0: the model's training context
  std::uint32_t batch = 512;
  std::string cache_type = "f16";  // --cache-type, checked by parse_cache_type
};

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
  std::uint64_t seed = 0;
  std::vector<std::string> stop;
  double timeout = 0;
  bool ignore_eos = false;
};

void add_model_options(CLI::App* sub, ModelOptions& o);
// --cache-type f16|f32 (also used by perplexity and bench); parse_cache_type
// turns it into a CacheType or throws Error(InvalidArgument) with a one-line reason.
void add_cache_type_option(CLI::App* sub, std::string& type);
CacheType parse_cache_type(const std::string& name);
void add_sampling_options(CLI::App* sub, SamplingOptions& o, const std::string& n_predict_help);

// Loads the model (-m or the bundled one) and opens a session sized by -c/-b.
std::shared_ptr<const Model> load_model(const ModelOptions& o);
std::unique_ptr<Session> open_session(const Model& model, const ModelOptions& o);

// Turns the options into a GenerateConfig; throws Error(InvalidArgument) with
// a one-line reason for any value out of range (checked against the model's
// vocabulary when `n_vocab` > 0).
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

}  // namespace seam::cli
