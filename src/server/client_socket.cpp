#include "server/client_socket.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace seam::server {

namespace {

// The numeric host and the port of a socket address, as httplib formats a peer.
bool host_and_port(const sockaddr_storage& addr, socklen_t len, std::string& host, int& port) {
  char buf[NI_MAXHOST];
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, buf, sizeof buf, nullptr, 0,
                    NI_NUMERICHOST) != 0)
    return false;
  host = buf;
  if (addr.ss_family == AF_INET)
    port = ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
  else if (addr.ss_family == AF_INET6)
    port = ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port);
  else
    return false;
  return true;
}

}  // namespace

int find_client_socket(int local_port, const std::string& remote_addr, int remote_port) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    char* end = nullptr;
    const std::string name = entry.path().filename().string();
    const long fd = std::strtol(name.c_str(), &end, 10);
    if (name.empty() || *end != '\0') continue;
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    std::string host;
    int port = 0;
    if (::getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
        !host_and_port(addr, len, host, port) || port != local_port)
      continue;
    len = sizeof addr;
    if (::getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
        !host_and_port(addr, len, host, port))
      continue;
    if (port == remote_port && host == remote_addr) return static_cast<int>(fd);
  }
  return -1;
}

bool client_connected(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return true;  // nothing to read: the peer has said nothing
  if (p.revents & (POLLERR | POLLNVAL)) return false;
  char byte;
  const ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return true;
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
  return false;  // 0: an orderly close; < 0: a reset
}

}  // namespace seam::server
