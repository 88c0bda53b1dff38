#pragma once
// The HTTP/1.1 server behind every plain-HTTP gpuledger listener (the agent's /metrics and
// probes, the server's API). One event-loop thread reads and writes every connection without
// blocking; handlers run on worker threads, probes on a thread of their own. So a client that
// sends its request a byte at a time, or never reads its answer, holds a connection slot and
// nothing else: it cannot hold a worker, and it loses its slot at a deadline (issue 29: eight
// such clients stopped cpp-httplib's thread pool, /healthz included).
//
// What the loop enforces, per connection: the whole request (head and body) within
// `request_timeout_us` of its first byte; an idle keep-alive connection closed after
// `idle_timeout_us`; a response written within `write_timeout_us` plus a second for every
// `min_write_bytes_per_second` of it (a client reading steadily at that rate is never cut, one
// that stalls is: issue 58, a 51 MB export cut at 35.6 MB read at 1 MB/s); at most
// `max_connections`
// open (at the cap a new connection takes the slot of the one that has been waiting longest for
// a request, so a crowd of slow clients cannot lock a probe out). Across connections, the bodies
// declared and not yet answered hold at most `max_pending_body_bytes`: a head whose body would
// pass it is answered 503 with Retry-After before its body is read (issue 58: 130 stalled
// bodies took the webhook to 1.1 GB). Pipelined requests are
// answered in order. The port is the listener's alone (SO_REUSEADDR, never SO_REUSEPORT: a
// second agent on a used port would otherwise share its scrapes, issue 29 finding 2), every
// connection has TCP_NODELAY, the backlog is kListenBacklog.
//
// A streamed response (Response::stream) is written a part at a time: its worker makes a part,
// hands it to the loop and waits until it is written before making the next, so a client that
// stops reading holds one part, is cut by the same write deadline (counted per part), and its
// worker learns it is gone and stops.
//
// With `tls`, the handshake and every read and write run in the loop too (non-blocking
// OpenSSL), under the same deadlines: a client that stalls its handshake is a slow client.
//
// Thread-safety: Serve() runs the loop on the calling thread until Stop(), which may be called
// from any thread (or before Serve). Handlers run concurrently on up to `workers` threads.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/units.h"
#include "http/request.h"
#include "http/response.h"

struct ssl_ctx_st;

namespace gpuledger::http {

using Handler = std::function<Response(const Request&)>;

// OpenSSL's SSL_CTX, declared (above) so that this header does not pull in OpenSSL.
using TlsContext = ::ssl_ctx_st;

struct ServerOptions {
  int workers = 4;                    // threads running the handler for ordinary paths
  std::set<std::string> probe_paths;  // answered by a thread of their own, never queued
  std::size_t max_connections = 1024;
  Micros request_timeout_us = 10 * kMicrosPerSecond;
  Micros idle_timeout_us = 120 * kMicrosPerSecond;  // above Prometheus's longest usual interval
  Micros write_timeout_us = 30 * kMicrosPerSecond;
  std::size_t min_write_bytes_per_second = 64 * 1024;
  std::size_t max_pending_body_bytes = 64 << 20;
  RequestLimits limits;
  // Named in bind errors: the flag the user set the address with.
  std::string flag = "--listen";
  // When set, every connection speaks TLS with this context (certificate, key and protocol
  // floor set by the owner; the server adds partial writes). The process must ignore SIGPIPE.
  std::shared_ptr<TlsContext> tls;
};

// Counters of what the loop refused or cut, for the owner's /metrics
// (prometheus/http_stats.h writes them).
struct ServerStats {
  std::atomic<std::uint64_t> connections_accepted{0};
  std::atomic<std::uint64_t> connections_evicted{0};  // at the cap, for a newer one
  std::atomic<std::uint64_t> requests_timed_out{0};   // request not complete in time
  std::atomic<std::uint64_t> requests_refused{0};     // malformed or over a limit
  std::atomic<std::uint64_t> requests_answered{0};
  std::atomic<std::uint64_t> tls_handshakes_failed{0};  // old protocols, plain HTTP, resets
};

class Server {
 public:
  // Binds `listen` ("host:port", port 0 for any free one) and starts listening. A port in use
  // or an address that is not this host's is kInvalidArgument naming `listen`.
  static Result<std::unique_ptr<Server>> Bind(const std::string& listen, Handler handler,
                                              ServerOptions options = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port() const;
  const std::string& host() const;
  // Shared, so a /metrics renderer may outlive the server.
  std::shared_ptr<const ServerStats> stats() const;
  void Serve();  // blocks until Stop(); closes every connection before it returns
  void Stop();

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuledger::http
