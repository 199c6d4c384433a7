// Starts the built `seam serve --port 0 ...` as a child process, reads the
// port it prints, waits for /health, and stops it with SIGTERM (checking that
// it exits 0). Plus small HTTP helpers over cpp-httplib and raw sockets.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace seam::test {

using Json = nlohmann::json;
namespace fs = std::filesystem;

inline const std::string kStories = std::string(SEAM_SHARED_DIR) + "/models/stories260K.gguf";
// llama.cpp's Q4_K_M file (models/quant): Q4_K and Q6_K weights.
inline const std::string kQ4KM =
    std::string(SEAM_SHARED_DIR) + "/models/quant/ref-llama-512-q4_k_m.gguf";
inline const std::string kKjv = std::string(SEAM_SOURCE_DIR) + "/models/seam-kjv.gguf";

inline std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// stdout of `cmd` run by the shell; its exit status in *rc.
inline std::string run_command(const std::string& cmd, int* rc) {
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  *rc = ::pclose(p);
  return out;
}

class ServeProcess {
 public:
  explicit ServeProcess(std::vector<std::string> args) {
    const fs::path dir = fs::path(SEAM_SCRATCH_DIR) / "server" / std::to_string(::getpid());
    fs::create_directories(dir);
    static int n = 0;
    err_path_ = dir / ("serve-" + std::to_string(n++) + ".stderr");
    std::vector<std::string> argv_s = {SEAM_BINARY, "serve", "--port", "0"};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    // Emptied here, before the fork: the directory is named by this process's
    // id, which the system hands out again (pid_max 32768), so a file left by
    // an earlier run can be there; truncated by the child instead, it was read
    // first on a loaded machine, and the test waited a minute on that run's
    // long-gone port.
    const int err_fd = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (err_fd < 0) {
      ADD_FAILURE() << "cannot create " << err_path_;
      return;
    }
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(err_fd, 2);
      const int null = ::open("/dev/null", O_RDWR);
      ::dup2(null, 0);
      ::dup2(null, 1);
      std::vector<char*> argv;
      for (auto& a : argv_s) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(err_fd);
    const std::regex re("listening on http://127\\.0\\.0\\.1:([0-9]+)");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      std::smatch m;
      const std::string err = slurp(err_path_);
      if (std::regex_search(err, m, re)) {
        port_ = std::stoi(m[1]);
        break;
      }
      int status;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        ADD_FAILURE() << "seam serve exited early: " << err;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (port_ == 0) {
      ADD_FAILURE() << "seam serve printed no port: " << slurp(err_path_);
      return;
    }
    // Each probe waits 5 s at most: twice in this project's full suite on a
    // loaded 2-core machine one connection went unanswered and, with the
    // client's 60 s read timeout, used up the whole wait (stop 35's note).
    std::string last = "no answer";
    while (std::chrono::steady_clock::now() < deadline) {
      auto r = client(5).Get("/health");
      if (r && r->status == 200) return;
      last = r ? "status " + std::to_string(r->status) : httplib::to_string(r.error());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "/health on port " << port_ << " never turned 200 (last: " << last
                  << "): " << stderr_text();
  }

  ~ServeProcess() {
    if (pid_ > 0) {
      const int rc = stop();
      EXPECT_EQ(rc, 0) << "seam serve should exit 0 on SIGTERM; stderr:\n" << stderr_text();
    }
  }

  // SIGTERM, then the exit status (-1 if killed by a signal).
  int stop() {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  int port() const { return port_; }
  bool ok() const { return port_ > 0; }
  std::string stderr_text() const { return slurp(err_path_); }

  httplib::Client client(int read_timeout_s = 60) const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(read_timeout_s, 0);
    c.set_connection_timeout(5, 0);
    return c;
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  fs::path err_path_;
};

// Parses an SSE body into the JSON of each "data:" event; the final
// "[DONE]" is checked and dropped. Comment lines (": ...") are skipped.
inline std::vector<Json> sse_events(const std::string& body, bool* saw_done = nullptr) {
  std::vector<Json> out;
  bool done = false;
  std::size_t at = 0;
  while (at < body.size()) {
    const std::size_t end = body.find("\n\n", at);
    EXPECT_NE(end, std::string::npos) << "an event without its blank line: " << body.substr(at);
    if (end == std::string::npos) break;
    const std::string ev = body.substr(at, end - at);
    at = end + 2;
    if (ev.rfind(":", 0) == 0) continue;
    EXPECT_EQ(ev.rfind("data: ", 0), 0u) << ev;
    EXPECT_FALSE(done) << "an event after [DONE]: " << ev;
    const std::string data = ev.substr(6);
    if (data == "[DONE]") {
      done = true;
      continue;
    }
    out.push_back(Json::parse(data));
  }
  if (saw_done) *saw_done = done;
  return out;
}

// A raw TCP connection to the server, for clients httplib will not imitate
// (half-sent requests, abrupt disconnects).
class RawSocket {
 public:
  explicit RawSocket(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~RawSocket() { close(); }
  bool ok() const { return fd_ >= 0; }
  bool send(const std::string& s) {
    return ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size());
  }
  // Reads until `needle` shows up (or the peer closes, or timeout).
  std::string read_until(const std::string& needle, int timeout_ms = 20000) {
    std::string got;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    char buf[4096];
    while (got.find(needle) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      timeval tv{0, 100000};
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n == 0) break;
      if (n > 0) got.append(buf, static_cast<std::size_t>(n));
    }
    return got;
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// The value of one un-labelled metric (or labelled, when `name` includes the
// label set), -1 when absent.
inline double metric(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  }
  return -1;
}

}  // namespace seam::test
