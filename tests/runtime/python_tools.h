// Runs tools/reference.py (numpy, Debian's python3) from tests.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "seam/types.h"

namespace seam::testing {

inline std::string scratch_dir() {
  const std::string dir = std::string(SEAM_SCRATCH_DIR);
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::string reference_py() { return std::string(SEAM_SOURCE_DIR) + "/tools/reference.py"; }

// Runs a command and returns its stdout; fails the test on a non-zero exit.
inline std::string run_command(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    ADD_FAILURE() << "cannot run: " << cmd;
    return out;
  }
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int rc = pclose(p);
  EXPECT_EQ(rc, 0) << "command failed: " << cmd << "\n" << out;
  return out;
}

inline std::string join_ids(const std::vector<Token>& ids) {
  std::string s;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ids[i]);
  }
  return s;
}

// Tests run as parallel processes and may make the same cached file or folder at
// once: each writes its own `private_tmp(path)`, and `publish(tmp, path)` (a shell
// command) renames it into place, or drops it when another process got there first.
inline std::string private_tmp(const std::string& path) {
  return path + "." + std::to_string(::getpid()) + ".tmp";
}
inline std::string publish(const std::string& tmp, const std::string& path) {
  return "{ mv -T " + tmp + " " + path + " 2>/dev/null || rm -rf " + tmp + "; }";
}

// Runs `make` (a shell command with TMP where the file goes) once per `path`:
// ctest runs tests as parallel processes, so it writes privately and renames.
inline std::string cached_file(const std::string& path, const std::string& make) {
  if (!std::filesystem::exists(path)) {
    const std::string tmp = private_tmp(path);
    std::string cmd = make;
    cmd.replace(cmd.find("TMP"), 3, tmp);
    run_command(cmd + " && " + publish(tmp, path));
  }
  return path;
}

// reference.py gen ARGS -> path of the generated model (cached across tests by name).
inline std::string generate_model(const std::string& name, const std::string& args) {
  return cached_file(scratch_dir() + "/" + name + ".gguf",
                     std::string(SEAM_PYTHON) + " " + reference_py() + " gen --out TMP " + args);
}

inline std::vector<float> read_f32_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<float> v(std::filesystem::file_size(path) / sizeof(float));
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  return v;
}

// Reference logits for every position: [n_tokens][n_vocab].
// `extra`: more reference.py logits options (--q8-experts).
inline std::vector<float> reference_logits(const std::string& model, const std::vector<Token>& ids,
                                           const std::string& tag, const std::string& extra = "") {
  const std::string out = scratch_dir() + "/" + tag + ".logits.f32";
  run_command(std::string(SEAM_PYTHON) + " " + reference_py() + " logits " + model + " --tokens " +
              join_ids(ids) + " --out " + out + " " + extra);
  return read_f32_file(out);
}

// Reference greedy continuation ids.
inline std::vector<Token> reference_greedy(const std::string& model, const std::vector<Token>& ids,
                                           int n) {
  const std::string out =
      run_command(std::string(SEAM_PYTHON) + " " + reference_py() + " greedy " + model +
                  " --tokens " + join_ids(ids) + " --n " + std::to_string(n));
  std::vector<Token> res;
  std::string num;
  for (char c : out) {
    if ((c >= '0' && c <= '9') || c == '-') {
      num += c;
    } else if (!num.empty()) {
      res.push_back(std::stoi(num));
      num.clear();
    }
  }
  if (!num.empty()) res.push_back(std::stoi(num));
  return res;
}

}  // namespace seam::testing
