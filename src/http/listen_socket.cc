#include "http/listen_socket.h"

#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace gpuledger::http {

Result<ListenSocket> ListenTcp(const std::string& host, int port, int backlog,
                               const std::string& flag) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0)
    return InvalidArgument(
        fmt::format("{}: cannot resolve '{}': {}", flag, host, gai_strerror(rc)));
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, &::freeaddrinfo);

  int last_errno = 0;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd =
        ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last_errno = errno;
      continue;
    }
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, backlog) != 0) {
      last_errno = errno;
      ::close(fd);
      continue;
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
    const int bound_port = bound.ss_family == AF_INET6
                               ? ntohs(reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port)
                               : ntohs(reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
    return ListenSocket{fd, bound_port};
  }
  if (last_errno == EADDRINUSE)
    return InvalidArgument(fmt::format(
        "{}: port {} is in use (another gpuledger or another program listens there)", flag, port));
  if (last_errno == EADDRNOTAVAIL)
    return InvalidArgument(fmt::format("{}: '{}' is not an address of this host", flag, host));
  return InvalidArgument(fmt::format("{}: cannot listen: {}", flag, std::strerror(last_errno)));
}

}  // namespace gpuledger::http
