// seam chat: an interactive conversation through the model's chat template.
// Each line on stdin is a user turn (typed on a terminal or piped in); the
// answer streams to stdout, a per-turn summary goes to stderr. The history
// stays in the KV cache, so each turn prefills only what is new.
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "generate_options.h"
#include "seam/chat.h"
#include "seam/error.h"
#include "seam/generate.h"
#include "seam/model.h"
#include "template_choice.h"

namespace seam::cli {

namespace {

std::string trim_line(std::string s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n')) s.pop_back();
  return s;
}

}  // namespace

void add_chat_command(CLI::App& app, CommandList& list) {
  struct Opts {
    ModelOptions model;
    SamplingOptions sampling;
    std::string system;
    std::string template_arg;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand(
      "chat",
      "Chat with a model in the terminal (or over a pipe: each stdin line is a user turn). "
      "Commands: /reset, /system TEXT, /save FILE, /quit. Ctrl-C stops the current answer.");
  add_model_options(sub, o->model);
  sub->add_option("--system", o->system, "System message that opens the conversation");
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

    nlohmann::ordered_json context;
    std::string bos_text;
    if (auto b = model->bos()) {
      bos_text = model->detok(*b, Detok::Text);
      context["bos_token"] = bos_text;
    }
    if (auto e = model->eos()) context["eos_token"] = model->detok(*e, Detok::Text);
    context["add_generation_prompt"] = true;

    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    auto set_system = [&](const std::string& text) {
      if (!messages.empty() && messages[0]["role"] == "system") messages.erase(0);
      if (!text.empty())
        messages.insert(messages.begin(),
                        nlohmann::ordered_json{{"role", "system"}, {"content", text}});
    };
    set_system(o->system);

    install_sigint_handler();

    const bool tty = isatty(STDIN_FILENO);
    if (tty)
      std::fprintf(stderr, "seam chat: %s, template %s. /reset, /system TEXT, /save FILE, /quit\n",
                   model->info().name.c_str(), tmpl.name.c_str());
    std::string line;
    for (;;) {
      if (tty) std::fputs("> ", stderr);
      if (!std::getline(std::cin, line)) break;
      line = trim_line(line);
      if (line.empty()) continue;
      if (line[0] == '/') {
        const auto sp = line.find(' ');
        const std::string cmd = line.substr(0, sp);
        const std::string arg = sp == std::string::npos ? "" : line.substr(sp + 1);
        if (cmd == "/quit" || cmd == "/exit") break;
        if (cmd == "/reset") {
          const bool had_system = !messages.empty() && messages[0]["role"] == "system";
          nlohmann::ordered_json sys = had_system ? messages[0] : nlohmann::ordered_json();
          messages = nlohmann::ordered_json::array();
          if (had_system) messages.push_back(sys);
          session->clear_seq(gc.seq);
          std::fprintf(stderr, "seam: conversation reset\n");
        } else if (cmd == "/system") {
          set_system(arg);
          std::fprintf(stderr, "seam: system message %s\n", arg.empty() ? "removed" : "set");
        } else if (cmd == "/save") {
          if (arg.empty()) {
            std::fprintf(stderr, "seam: /save needs a file name\n");
            continue;
          }
          std::ofstream f(arg, std::ios::binary | std::ios::trunc);
          f << nlohmann::ordered_json{{"messages", messages}}.dump(
                   2, ' ', false, nlohmann::json::error_handler_t::replace)
            << '\n';
          if (!f.good()) {
            std::fprintf(stderr, "seam: cannot write '%s'\n", arg.c_str());
          } else {
            std::fprintf(stderr, "seam: saved %zu messages to %s\n", messages.size(), arg.c_str());
          }
        } else {
          std::fprintf(stderr,
                       "seam: unknown command %s (try /reset, /system TEXT, /save FILE, /quit)\n",
                       cmd.c_str());
        }
        continue;
      }
      messages.push_back({{"role", "user"}, {"content", line}});
      context["messages"] = messages;
      const std::string text = render_chat_template(tmpl.source, context);
      const bool add_bos = !bos_text.empty() && text.rfind(bos_text, 0) != 0;
      const std::vector<Token> prompt = model->tokenize(text, add_bos, true);
      cancel_flag().store(false);
      generating().store(true);
      GenerateResult r;
      try {
        r = generate(*model, *session, prompt, gc, [](std::string_view piece) {
          std::fwrite(piece.data(), 1, piece.size(), stdout);
          std::fflush(stdout);
        });
      } catch (const Error& e) {
        generating().store(false);
        if (e.code() != Errc::ContextFull) throw;
        messages.erase(messages.size() - 1);
        std::fprintf(stderr, "seam: %s; the turn was dropped (/reset starts over)\n", e.what());
        continue;
      }
      generating().store(false);
      std::fputc('\n', stdout);
      std::fflush(stdout);
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
