// seam chat: an interactive conversation through the model's chat template.
// Each line on stdin is a user turn (typed on a terminal or piped in); the
// answer streams to stdout, a per-turn summary goes to stderr. The history
// stays in the KV cache, so each turn prefills only what is new.
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "generate_options.h"
#include "line_reader.h"
#include "seam/chat.h"
#include "seam/error.h"
#include "seam/generate.h"
#include "seam/model.h"
#include "template_choice.h"

namespace seam::cli {

namespace {

constexpr const char* kHelp =
    "commands: /help, /reset (or /clear) starts over, /system TEXT sets the system message, "
    "/save FILE writes the conversation as JSON, /bye (or /quit, /exit) leaves.\n"
    "multi-line input: end a line with \\ to go on, or put the text between two \"\"\" lines.";

using Json = nlohmann::ordered_json;

bool has_system(const Json& messages) {
  return !messages.empty() && messages[0]["role"] == "system";
}

}  // namespace

void add_chat_command(CLI::App& app, CommandList& list) {
  struct Opts {
    ModelOptions model;
    SamplingOptions sampling;
    std::string system;
    std::string template_arg;
    bool conversation = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand(
      "chat",
      "Chat with a model in the terminal (or over a pipe: each stdin line is a user turn). "
      "Commands: /help, /reset, /system TEXT, /save FILE, /bye. Ctrl-C stops the current answer; "
      "on a terminal, lines can be edited and recalled (Up arrow).");
  add_model_options(sub, o->model);
  sub->add_option("--system,--system-prompt", o->system,
                  "System message that opens the conversation (llama.cpp: -sys)");
  sub->add_flag("--conversation", o->conversation,
                "llama.cpp's -cnv; accepted: seam chat is always a conversation");
  sub->add_option("--template", o->template_arg,
                  "Chat template: a built-in name (chatml, llama3, gemma) or a Jinja file "
                  "(default: the model's own, else chatml)");
  add_sampling_options(sub, o->sampling, "Most tokens per answer (-1: until end of turn)");
  list.emplace_back(sub, [o] {
    GenerateConfig gc = make_generate_config(o->sampling, o->model, 0);
    auto model = load_model(o->model);
    gc = make_generate_config(o->sampling, o->model, model->info().n_vocab);
    const TemplateChoice tmpl = choose_template(*model, o->template_arg);
    validate_chat_template(tmpl.source);
    for (std::string& s : turn_end_stops(*model, tmpl.source)) gc.stop.push_back(std::move(s));
    gc.cancel = &cancel_flag();
    gc.on_prefill = prefill_progress(o->model.batch);
    auto session = open_session(*model, o->model);
    const std::uint32_t n_ctx = session->n_ctx();
    // Room left for an answer when deciding whether old turns must go.
    const std::size_t reserve =
        o->sampling.n_predict > 0
            ? std::min<std::size_t>(static_cast<std::size_t>(o->sampling.n_predict), n_ctx / 2)
            : n_ctx / 4;

    Json context;
    std::string bos_text;
    if (auto b = model->bos()) {
      bos_text = model->detok(*b, Detok::Text);
      context["bos_token"] = bos_text;
    }
    if (auto e = model->eos()) context["eos_token"] = model->detok(*e, Detok::Text);
    context["add_generation_prompt"] = true;

    auto render = [&](const Json& msgs) {
      context["messages"] = msgs;
      const std::string text = render_chat_template(tmpl.source, context);
      const bool add_bos = !bos_text.empty() && text.rfind(bos_text, 0) != 0;
      return model->tokenize(text, add_bos, true);
    };
    // The conversation with `text` as its system message, checked by rendering
    // it: a template without a system role refuses here, not at the next turn.
    auto with_system = [&](const Json& msgs, const std::string& text) {
      Json out = msgs;
      if (has_system(out)) out.erase(0);
      if (!text.empty()) out.insert(out.begin(), Json{{"role", "system"}, {"content", text}});
      Json probe = out;
      probe.push_back({{"role", "user"}, {"content", "hi"}});
      render(probe);
      return out;
    };
    // The prompt for `msgs`, dropping the oldest turns (never the system
    // message or the newest user message) until an answer has room.
    auto fit = [&](Json& msgs) {
      std::size_t dropped = 0;
      for (;;) {
        std::vector<Token> prompt = render(msgs);
        const std::size_t first = has_system(msgs) ? 1 : 0;
        if (prompt.size() + reserve <= n_ctx || msgs.size() - first <= 1) {
          check_prompt_fits(prompt.size(), n_ctx);
          if (dropped)
            std::fprintf(stderr,
                         "seam: the context (%u tokens) is full: dropped the %zu oldest "
                         "messages%s\n",
                         n_ctx, dropped, first ? " (the system message is kept)" : "");
          return prompt;
        }
        // One turn: the oldest message and whatever follows up to the next user message.
        do {
          msgs.erase(first);
          ++dropped;
        } while (msgs.size() - first > 1 && msgs[first]["role"] != "user");
      }
    };

    Json messages = Json::array();
    try {
      messages = with_system(messages, o->system);
    } catch (const Error& e) {
      throw Error(e.code(), "--system: " + std::string(e.what()));
    }

    install_sigint_handler();
    LineReader reader;
    if (reader.interactive())
      std::fprintf(stderr, "seam chat: %s, template %s, seed %llu. /help lists the commands\n",
                   model->info().name.c_str(), tmpl.name.c_str(),
                   static_cast<unsigned long long>(gc.sampler.seed));
    while (auto entry = reader.read()) {
      std::string line = *entry;
      while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
      if (line.empty()) continue;
      if (line[0] == '/') {
        const auto sp = line.find(' ');
        const std::string cmd = line.substr(0, sp);
        const std::string arg = sp == std::string::npos ? "" : line.substr(sp + 1);
        if (cmd == "/quit" || cmd == "/exit" || cmd == "/bye") break;
        if (cmd == "/help") {
          std::fprintf(stderr, "%s\n", kHelp);
        } else if (cmd == "/reset" || cmd == "/clear") {
          Json kept = Json::array();
          if (has_system(messages)) kept.push_back(messages[0]);
          messages = std::move(kept);
          session->clear_seq(gc.seq);
          std::fprintf(stderr, "seam: conversation reset\n");
        } else if (cmd == "/system") {
          try {
            messages = with_system(messages, arg);
            std::fprintf(stderr, "seam: system message %s\n", arg.empty() ? "removed" : "set");
          } catch (const Error& e) {
            std::fprintf(stderr, "seam: error: /system: %s; the system message is unchanged\n",
                         e.what());
          }
        } else if (cmd == "/save") {
          if (arg.empty()) {
            std::fprintf(stderr, "seam: /save needs a file name\n");
            continue;
          }
          std::ofstream f(arg, std::ios::binary | std::ios::trunc);
          f << Json{{"messages", messages}}.dump(2, ' ', false,
                                                 nlohmann::json::error_handler_t::replace)
            << '\n';
          f.flush();
          if (!f.good()) {
            std::fprintf(stderr, "seam: cannot write '%s'\n", arg.c_str());
          } else {
            std::fprintf(stderr, "seam: saved %zu messages to %s\n", messages.size(), arg.c_str());
          }
        } else {
          std::fprintf(stderr, "seam: unknown command %s (/help lists them)\n", cmd.c_str());
        }
        continue;
      }
      // A turn works on a copy: if anything fails, the conversation is as it was.
      Json work = messages;
      work.push_back({{"role", "user"}, {"content", line}});
      GenerateResult r;
      try {
        const std::vector<Token> prompt = fit(work);
        cancel_flag().store(false);
        generating().store(true);
        r = generate(*model, *session, prompt, gc,
                     [](std::string_view piece) { write_stdout(piece); });
        generating().store(false);
      } catch (const Error& e) {
        generating().store(false);
        if (e.code() == Errc::Io) throw;  // stdout is gone: nothing left to talk to
        if (session->corrupted()) session = open_session(*model, o->model);
        std::fprintf(stderr, "seam: error: %s; the turn was dropped, the conversation goes on\n",
                     e.what());
        continue;
      }
      write_stdout("\n");
      messages = std::move(work);
      messages.push_back({{"role", "assistant"}, {"content", r.text}});
      std::fprintf(stderr,
                   "[%zu prompt tokens, %zu cached, %zu generated, %s; ttft %.1f ms, "
                   "%.1f tok/s]\n",
                   r.prompt_tokens, r.cached_prompt_tokens, r.completion_tokens,
                   std::string(finish_reason_name(r.finish)).c_str(), r.ttft_ms,
                   r.decode_tokens_per_s);
    }
    return 0;
  });
}

}  // namespace seam::cli
