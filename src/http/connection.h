#pragma once
// One connection of the HTTP server's event loop (server.h) and its two moves, a read and a
// write, plain or through TLS. The loop's own; nothing else holds one.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "http/part_gate.h"

struct ssl_st;  // OpenSSL's SSL, declared so that this header does not pull in OpenSSL

namespace gpuledger::http {

// Deadlines are about real sockets and epoll waits in real time: the steady clock, not the
// injected Clock of the metering path.
using SteadyClock = std::chrono::steady_clock;
using TimePoint = SteadyClock::time_point;

struct Connection {
  // kStreaming: a streamed response's part is written and the worker is making the next.
  enum class State { kReading, kHandling, kWriting, kStreaming, kDraining };
  std::uint64_t key = 0;
  int fd = -1;
  State state = State::kReading;
  std::string in;        // received, not yet taken by a request
  std::string out;       // the response being written
  std::size_t sent = 0;  // bytes of `out` written
  bool close_after_write = false;
  bool peer_closed = false;        // the client sent EOF
  bool request_started = false;    // bytes of the next request have arrived
  std::size_t body_reserved = 0;   // of the pending-body budget, for the body still coming
  TimePoint waiting_since;         // when it began waiting for its next request (eviction order)
  TimePoint write_started;         // when `out` began to be written
  TimePoint deadline;              // when the current state times out (not while handling)
  std::uint32_t interest = 0;      // the epoll events asked for
  ::ssl_st* ssl = nullptr;         // with TLS: the session, freed with the connection
  bool tls_wants_other = false;    // the last TLS call needs the other direction (a handshake)
  std::shared_ptr<PartGate> gate;  // while a streamed response's parts are being written
};

// What one read or write on a connection came to.
enum class Io { kMoved, kWouldBlock, kEof, kError };

// One read into `buf`: plain, or through TLS (which also drives the handshake). A draining
// connection's bytes are discarded unread, so they are read plain.
Io Receive(Connection& c, char* buf, std::size_t size, std::size_t& n);

// One write of `data`: plain, or through TLS.
Io Send(Connection& c, std::string_view data, std::size_t& n);

}  // namespace gpuledger::http
