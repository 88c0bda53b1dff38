#include "http/connection.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace gpuledger::http {

Io Receive(Connection& c, char* buf, std::size_t size, std::size_t& n) {
  if (c.ssl == nullptr || c.state == Connection::State::kDraining) {
    for (;;) {
      const ssize_t r = ::recv(c.fd, buf, size, 0);
      if (r > 0) {
        n = static_cast<std::size_t>(r);
        return Io::kMoved;
      }
      if (r == 0) return Io::kEof;
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? Io::kWouldBlock : Io::kError;
    }
  }
  ERR_clear_error();
  const int r = SSL_read(c.ssl, buf, static_cast<int>(size));
  if (r > 0) {
    n = static_cast<std::size_t>(r);
    c.tls_wants_other = false;
    return Io::kMoved;
  }
  switch (SSL_get_error(c.ssl, r)) {
    case SSL_ERROR_WANT_READ:
      c.tls_wants_other = false;
      return Io::kWouldBlock;
    case SSL_ERROR_WANT_WRITE:
      c.tls_wants_other = true;
      return Io::kWouldBlock;
    case SSL_ERROR_ZERO_RETURN:
      return Io::kEof;
    default:
      return Io::kError;  // a failed handshake (an old protocol, plain HTTP), a reset
  }
}

Io Send(Connection& c, std::string_view data, std::size_t& n) {
  if (c.ssl == nullptr) {
    for (;;) {
      const ssize_t r = ::send(c.fd, data.data(), data.size(), MSG_NOSIGNAL);
      if (r > 0) {
        n = static_cast<std::size_t>(r);
        return Io::kMoved;
      }
      if (r < 0 && errno == EINTR) continue;
      return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? Io::kWouldBlock : Io::kError;
    }
  }
  ERR_clear_error();
  const int r =
      SSL_write(c.ssl, data.data(), static_cast<int>(std::min<std::size_t>(data.size(), 1 << 30)));
  if (r > 0) {
    n = static_cast<std::size_t>(r);
    c.tls_wants_other = false;
    return Io::kMoved;
  }
  switch (SSL_get_error(c.ssl, r)) {
    case SSL_ERROR_WANT_WRITE:
      c.tls_wants_other = false;
      return Io::kWouldBlock;
    case SSL_ERROR_WANT_READ:
      c.tls_wants_other = true;
      return Io::kWouldBlock;
    default:
      return Io::kError;
  }
}

}  // namespace gpuledger::http
