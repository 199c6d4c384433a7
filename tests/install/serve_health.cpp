// Embeds the OpenAI-compatible server through include/seam/server.h: starts it on a free
// port, attaches the model, asks GET /health over a socket, then stops it and waits for the
// drain. Prints the status line it got.
//
//   serve_health MODEL.gguf
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "seam/error.h"
#include "seam/model.h"
#include "seam/server.h"

namespace {

// The first line of the answer to GET `path` on 127.0.0.1:`port`, or "" on a socket error.
std::string status_line(int port, const char* path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string answer;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string request =
        std::string("GET ") + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buf[4096];
      ssize_t n;
      while ((n = read(fd, buf, sizeof buf)) > 0) answer.append(buf, static_cast<std::size_t>(n));
    }
  }
  close(fd);
  return answer.substr(0, answer.find("\r\n"));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.gguf\n", argv[0]);
    return 2;
  }
  try {
    seam::ServerConfig config;
    config.port = 0;
    config.parallel = 1;
    config.n_ctx = 256;
    auto server = seam::start_server(config);
    auto model = seam::Model::load(argv[1]);
    server->set_model(model, model->info().chat_template.value_or(""), {});
    const std::string health = status_line(server->port(), "/health");
    server->stop();
    server->wait();
    std::printf("GET /health: %s\n", health.c_str());
    return health.empty() ? 1 : 0;
  } catch (const seam::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
