// Reads the user's input for `seam chat`: with line editing and history
// (libedit) when stdin is a terminal, plain lines from stdin otherwise.
// Multi-line input: end a line with `\` to continue it on the next, or put
// the text between two lines that hold only `"""`.
#pragma once

#include <optional>
#include <string>

namespace seam::cli {

class LineReader {
 public:
  LineReader();
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  bool interactive() const { return tty_; }
  // One user entry (continuation lines joined with '\n'); nullopt at the end
  // of input (Ctrl-D on a terminal).
  std::optional<std::string> read();

 private:
  std::optional<std::string> read_line(const char* prompt);
  bool tty_;
};

}  // namespace seam::cli
