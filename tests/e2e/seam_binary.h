// Running the built `seam` binary from an end-to-end test: its exit status,
// stdout and stderr captured separately, through a shell so that a test can
// redirect stdout (e.g. to /dev/full) or set environment variables.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace seam::e2e {

namespace fs = std::filesystem;

struct Output {
  int rc = -1;
  std::string out, err;
};

inline std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// ctest runs each test in its own process, several at once: one folder per process.
inline fs::path scratch(const std::string& name) {
  const fs::path dir = fs::path(SEAM_SCRATCH_DIR) / "e2e" / std::to_string(::getpid());
  fs::create_directories(dir);
  return dir / name;
}

// `s` as one word for the shell.
inline std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// `seam ARGS`, each argument quoted.
inline std::string command_line(const std::vector<std::string>& args) {
  std::string cmd = quote(SEAM_BINARY);
  for (const auto& a : args) cmd += ' ' + quote(a);
  return cmd;
}

// The exit status of `cmd` run by bash (-1 when a signal ended it).
inline int shell(const std::string& cmd) {
  const int status = std::system(("bash -c " + quote(cmd)).c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// `seam ARGS` with `input` on stdin; `stdout_to` replaces the captured stdout
// (e.g. /dev/full); `env` is prefixed to the command line (VAR=value ...).
inline Output run_seam(const std::vector<std::string>& args, const std::string& input = "",
                       const std::string& stdout_to = "", const std::string& env = "") {
  const fs::path in = scratch("stdin.txt"), out = scratch("stdout.txt"),
                 err = scratch("stderr.txt");
  std::ofstream(in, std::ios::binary) << input;
  fs::remove(out);
  const std::string cmd = env + " " + command_line(args) + " < " + quote(in.string()) + " > " +
                          quote(stdout_to.empty() ? out.string() : stdout_to) + " 2> " +
                          quote(err.string());
  Output o;
  o.rc = shell(cmd);
  o.out = slurp(out);
  o.err = slurp(err);
  return o;
}

}  // namespace seam::e2e
