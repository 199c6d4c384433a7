#include "line_reader.h"

#include <editline/readline.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace seam::cli {

LineReader::LineReader() : tty_(isatty(STDIN_FILENO) != 0) {
  if (tty_) {
    // The prompt and the editing go to stderr: stdout carries only the answers.
    rl_outstream = stderr;
    rl_catch_signals = 0;  // Ctrl-C keeps seam's own meaning (see install_sigint_handler)
  }
}

LineReader::~LineReader() = default;

std::optional<std::string> LineReader::read_line(const char* prompt) {
  if (tty_) {
    char* raw = readline(prompt);
    if (!raw) return std::nullopt;
    std::string line(raw);
    std::free(raw);
    return line;
  }
  std::string line;
  if (!std::getline(std::cin, line)) return std::nullopt;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

std::optional<std::string> LineReader::read() {
  auto first = read_line("> ");
  if (!first) return std::nullopt;
  std::string text = *first;
  if (text == "\"\"\"") {
    // A block: everything up to the closing """ line, newlines kept.
    text.clear();
    for (bool first_line = true;; first_line = false) {
      auto next = read_line(". ");
      if (!next || *next == "\"\"\"") break;
      if (!first_line) text += '\n';
      text += *next;
    }
  } else {
    while (!text.empty() && text.back() == '\\') {
      text.back() = '\n';
      auto next = read_line(". ");
      if (!next) break;
      text += *next;
    }
  }
  if (tty_ && !text.empty()) add_history(text.c_str());
  return text;
}

}  // namespace seam::cli
