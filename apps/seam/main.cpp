// seam: one binary, one subcommand per apps/seam/cmd_*.cpp. main() owns the
// rules every subcommand shares: llama.cpp's spellings, the last of a repeated
// flag wins, every error is one `seam: error:` line, and a failed write of
// stdout is an error.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "commands.h"
#include "generate_options.h"
#include "seam/error.h"

namespace {

// llama.cpp's multi-letter single-dash flags. CLI11 reads `-ngl 99` as `-n gl
// 99`, so they are respelled before parsing.
std::string respell(std::string_view arg) {
  static const std::pair<std::string_view, std::string_view> kSpellings[] = {
      {"-ngl", "--n-gpu-layers"}, {"-sys", "--system-prompt"}, {"-cnv", "--conversation"},
      {"-fa", "--flash-attn"},    {"-ctk", "--cache-type-k"},  {"-ctv", "--cache-type-v"},
      {"-np", "--parallel"},
  };
  for (const auto& [from, to] : kSpellings) {
    if (arg == from) return std::string(to);
    // -ngl=99
    if (arg.size() > from.size() && arg.substr(0, from.size()) == from && arg[from.size()] == '=')
      return std::string(to) + std::string(arg.substr(from.size()));
  }
  return std::string(arg);
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1] ? 1u : 0u)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The candidate nearest to `word`, if it is near enough to be a typo of it.
std::string nearest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const std::string& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::vector<std::string> flag_names(const CLI::App* app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app->get_options()) {
    for (const std::string& l : opt->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : opt->get_snames()) names.push_back("-" + s);
  }
  return names;
}

// "seam: error: ...", a hint for a typo, and where to read more: one line.
int parse_failure(const CLI::App& app, const CLI::ParseError& e) {
  const CLI::App* sub = nullptr;
  for (const CLI::App* s : app.get_subcommands()) sub = s;
  std::string msg = e.what();
  std::string hint;
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    // The unexpected words follow the colon; suggest a flag for each flag-like one.
    std::istringstream words(msg.substr(msg.find(':') + 1));
    for (std::string w; words >> w;) {
      if (w.size() < 2 || w[0] != '-' || !sub) continue;
      const std::string n = nearest(w.substr(0, w.find('=')), flag_names(sub));
      if (!n.empty()) {
        hint = "; did you mean " + n + "?";
        break;
      }
    }
  }
  const std::string where = sub ? "seam " + sub->get_name() + " --help" : "seam --help";
  std::fprintf(stderr, "seam: error: %s%s (see '%s')\n", msg.c_str(), hint.c_str(), where.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"seam: a local LLM inference runtime"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "seam 0.1.0");
  // A repeated flag: the last one wins, as in llama.cpp and most Unix tools.
  // Options that collect several values (--stop, --logit-bias) say so themselves.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  seam::cli::CommandList commands = seam::cli::register_commands(app);

  std::vector<std::string> args;
  for (int i = 0; i < argc; ++i) args.push_back(i == 0 ? argv[0] : respell(argv[i]));
  // An unknown subcommand: name it and the nearest real one.
  if (args.size() > 1 && !args[1].empty() && args[1][0] != '-') {
    std::vector<std::string> names;
    for (const auto& [sub, run] : commands) names.push_back(sub->get_name());
    if (std::find(names.begin(), names.end(), args[1]) == names.end()) {
      const std::string n = nearest(args[1], names);
      std::string all;
      for (const std::string& s : names) all += (all.empty() ? "" : ", ") + s;
      std::fprintf(
          stderr, "seam: error: unknown command '%s'%s (commands: %s; see 'seam --help')\n",
          args[1].c_str(), n.empty() ? "" : ("; did you mean '" + n + "'?").c_str(), all.c_str());
      return 2;
    }
  }
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  try {
    app.parse(static_cast<int>(cargs.size()), cargs.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    return parse_failure(app, e);
  }
  try {
    for (auto& [sub, run] : commands) {
      if (sub->parsed()) {
        const int rc = run();
        seam::cli::check_stdout();
        return rc;
      }
    }
  } catch (const std::exception& e) {
    // A seam::Error or anything else: one line, and never a half-written stdout unnoticed.
    std::fflush(stdout);
    std::fprintf(stderr, "seam: error: %s\n", e.what());
    return 1;
  }
  return 1;
}
