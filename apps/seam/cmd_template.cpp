// seam template: render a chat template against a JSON context, for debugging prompts.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.h"
#include "seam/chat.h"
#include "seam/error.h"
#include "seam/model.h"

namespace seam::cli {
namespace {

std::string read_input(const std::string& path, const char* what) {
  if (path == "-") return std::string(std::istreambuf_iterator<char>(std::cin), {});
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw Error(Errc::Io, std::string("cannot open ") + what + " '" + path + "'");
  std::string data;
  char buf[65536];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) data.append(buf, n);
  const bool failed = std::ferror(f);
  std::fclose(f);
  if (failed) throw Error(Errc::Io, std::string("cannot read ") + what + " '" + path + "'");
  return data;
}

// Error messages may carry a template's own text; keep the report on one line.
std::string one_line(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

void add_template_command(CLI::App& app, CommandList& list) {
  struct Opts {
    std::string model, template_file, builtin, context, now;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand(
      "template", "Render a chat template with a JSON context and print the exact prompt");
  auto* m = sub->add_option("-m,--model", o->model,
                            "GGUF file whose tokenizer.chat_template is rendered");
  auto* t = sub->add_option("--template", o->template_file, "Jinja template file to render");
  auto* b = sub->add_option("--builtin", o->builtin,
                            "Built-in template to render: chatml, llama3 or gemma");
  m->excludes(t)->excludes(b);
  t->excludes(b);
  sub->add_option("--context", o->context,
                  "JSON object of template variables (messages, tools, add_generation_prompt, "
                  "bos_token, ...); - reads stdin")
      ->required();
  sub->add_option("--now", o->now,
                  "Pin strftime_now's clock, \"YYYY-MM-DD HH:MM:SS\" (default: local time)");
  list.emplace_back(sub, [o] {
    try {
      std::string source;
      if (!o->model.empty()) {
        LoadOptions vocab_only;
        vocab_only.vocab_only = true;
        const auto model = Model::load(o->model, vocab_only);
        const auto& tmpl = model->info().chat_template;
        if (!tmpl)
          throw Error(Errc::InvalidArgument,
                      "'" + o->model +
                          "' has no tokenizer.chat_template; pass --builtin chatml|llama3|gemma "
                          "or --template FILE");
        source = *tmpl;
      } else if (!o->template_file.empty()) {
        source = read_input(o->template_file, "template");
      } else if (!o->builtin.empty()) {
        auto builtin = builtin_chat_template(o->builtin);
        if (!builtin)
          throw Error(Errc::InvalidArgument, "unknown built-in template '" + o->builtin +
                                                 "': use chatml, llama3 or gemma");
        source = std::string(*builtin);
      } else {
        throw Error(Errc::InvalidArgument,
                    "pass one of -m MODEL.gguf, --template FILE or --builtin NAME");
      }
      nlohmann::ordered_json context;
      const std::string text = read_input(o->context, "context file");
      try {
        context = nlohmann::ordered_json::parse(text);
      } catch (const nlohmann::json::exception& e) {
        throw Error(Errc::InvalidArgument,
                    "context file '" + o->context + "' is not valid JSON: " + e.what());
      }
      if (!context.is_object())
        throw Error(Errc::InvalidArgument,
                    "context file '" + o->context + "' must hold a JSON object of variables");
      TemplateOptions opts;
      if (!o->now.empty()) opts.now = parse_template_time(o->now);
      const std::string out = render_chat_template(source, context, opts);
      std::fwrite(out.data(), 1, out.size(), stdout);
      std::fflush(stdout);
      return 0;
    } catch (const Error& e) {
      std::fprintf(stderr, "seam: error: %s\n", one_line(e.what()).c_str());
      return 1;
    }
  });
}

}  // namespace seam::cli
