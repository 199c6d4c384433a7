// seam run: stream a prompt's continuation to stdout (or print the whole
// result as one JSON object with --json); a summary goes to stderr.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>

#include "commands.h"
#include "generate_options.h"
#include "seam/error.h"
#include "seam/generate.h"
#include "seam/model.h"

namespace seam::cli {

namespace {

nlohmann::ordered_json alternative_json(const Model& model, Token t, float logprob) {
  return {{"token", t}, {"text", model.detok(t, Detok::Text)}, {"logprob", logprob}};
}

nlohmann::ordered_json result_json(const Model& model, const GenerateResult& r, bool with_logprobs,
                                   std::uint64_t seed) {
  nlohmann::ordered_json j;
  j["text"] = r.text;
  j["tokens"] = r.tokens;
  j["finish_reason"] = finish_reason_name(r.finish);
  j["stop"] =
      r.stop_string ? nlohmann::ordered_json(*r.stop_string) : nlohmann::ordered_json(nullptr);
  j["usage"] = {{"prompt_tokens", r.prompt_tokens},
                {"cached_prompt_tokens", r.cached_prompt_tokens},
                {"completion_tokens", r.completion_tokens},
                {"total_tokens", r.prompt_tokens + r.completion_tokens},
                // the same figure where OpenAI clients look for it
                {"prompt_tokens_details", {{"cached_tokens", r.cached_prompt_tokens}}}};
  j["ttft_ms"] = r.ttft_ms;
  j["prefill_tokens_per_s"] = r.prefill_tokens_per_s;
  j["decode_tokens_per_s"] = r.decode_tokens_per_s;
  if (with_logprobs) {
    nlohmann::ordered_json lps = nlohmann::ordered_json::array();
    for (const TokenLogprob& lp : r.logprobs) {
      nlohmann::ordered_json e = alternative_json(model, lp.token, lp.logprob);
      nlohmann::ordered_json top = nlohmann::ordered_json::array();
      for (const TokenAlternative& a : lp.top)
        top.push_back(alternative_json(model, a.token, a.logprob));
      e["top_logprobs"] = std::move(top);
      lps.push_back(std::move(e));
    }
    j["logprobs"] = std::move(lps);
  }
  j["model"] = model.info().name;
  j["seed"] = seed;  // -s SEED repeats the run
  return j;
}

}  // namespace

void add_run_command(CLI::App& app, CommandList& list) {
  struct Opts {
    ModelOptions model;
    SamplingOptions sampling;
    std::string prompt;
    std::string prompt_file;
    bool conversation = false;
    bool parse_special = false;
    bool json = false;
    int logprobs = -1;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("run", "Generate a continuation of a prompt");
  add_model_options(sub, o->model);
  auto* p = sub->add_option("-p,--prompt", o->prompt,
                            "Prompt text; \"\" means BOS only, - reads it from stdin");
  auto* f = sub->add_option("-f,--file", o->prompt_file, "Read the prompt from this file");
  p->excludes(f);
  sub->add_flag("--conversation", o->conversation,
                "llama.cpp's -cnv; seam run completes one prompt: use `seam chat` instead");
  add_sampling_options(sub, o->sampling, "Most tokens to generate (-1: until end of generation)");
  sub->add_flag("--parse-special", o->parse_special,
                "Recognise special-token text such as <|im_end|> in the prompt");
  sub->add_flag("--json", o->json,
                "Print the whole result as one JSON object on stdout instead of streaming text");
  sub->add_option("--logprobs", o->logprobs,
                  "With --json: per-token log-probabilities (log-softmax of the raw logits) and "
                  "the N most likely alternatives")
      ->check(CLI::Range(0, 100));
  list.emplace_back(sub, [o, p, f] {
    if (o->conversation)
      throw Error(Errc::InvalidArgument,
                  "seam run completes one prompt; for a conversation (-cnv) use 'seam chat'");
    if (p->count() == 0 && f->count() == 0)
      throw Error(Errc::InvalidArgument, "give a prompt: -p TEXT, -p - (stdin) or -f FILE");
    std::string prompt_text = o->prompt;
    if (f->count()) {
      std::ifstream in(o->prompt_file, std::ios::binary);
      if (!in) throw Error(Errc::Io, "cannot read the prompt file '" + o->prompt_file + "'");
      prompt_text.assign(std::istreambuf_iterator<char>(in), {});
    } else if (prompt_text == "-") {
      prompt_text.assign(std::istreambuf_iterator<char>(std::cin), {});
    }
    if (o->logprobs >= 0 && !o->json)
      throw Error(Errc::InvalidArgument, "--logprobs needs --json (logprobs are printed as JSON)");
    // Reject bad values before the (slow) model load; the ids are checked again below.
    GenerateConfig gc = make_generate_config(o->sampling, o->model, 0);
    auto model = load_model(o->model);
    gc = make_generate_config(o->sampling, o->model, model->info().n_vocab);
    gc.logprobs = o->logprobs;
    const std::vector<Token> prompt = model->tokenize(prompt_text, true, o->parse_special);
    auto session = open_session(*model, o->model);
    check_prompt_fits(prompt.size(), session->n_ctx());
    TextSink sink;
    if (!o->json) sink = [](std::string_view text) { write_stdout(text); };
    gc.cancel = &cancel_flag();
    gc.on_prefill = prefill_progress(o->model.batch);
    install_sigint_handler();
    generating().store(true);
    const GenerateResult r = generate(*model, *session, prompt, gc, sink);
    generating().store(false);
    if (o->json) {
      write_stdout(result_json(*model, r, o->logprobs >= 0, gc.sampler.seed)
                       .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
    write_stdout("\n");
    std::fprintf(stderr,
                 "seam: %s: %zu prompt tokens (%zu cached), %zu generated (%s); ttft %.1f ms, "
                 "prefill %.1f tok/s, decode %.1f tok/s; seed %llu\n",
                 model->info().name.c_str(), r.prompt_tokens, r.cached_prompt_tokens,
                 r.completion_tokens, std::string(finish_reason_name(r.finish)).c_str(), r.ttft_ms,
                 r.prefill_tokens_per_s, r.decode_tokens_per_s,
                 static_cast<unsigned long long>(gc.sampler.seed));
    // Ctrl-C: what was generated is printed, and the status says it was cut short.
    return r.finish == FinishReason::Cancelled ? 130 : 0;
  });
}

}  // namespace seam::cli
