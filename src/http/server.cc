#include "http/server.h"

#include <fmt/format.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "http/connection.h"
#include "http/job_queue.h"
#include "http/listen.h"
#include "http/listen_socket.h"

namespace gpuledger::http {
namespace {

constexpr std::uint64_t kListenerKey = 0;
constexpr std::uint64_t kWakeKey = 1;
// How long a connection closed after an error response may still send before it is cut: its
// unread bytes would otherwise turn the close into a reset that loses the response.
constexpr auto kDrainTime = std::chrono::seconds(2);
// How long accepting pauses when the process is out of descriptors and nothing can be evicted.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
// A buffer this large is given back when it is done with, not kept for the next request.
constexpr std::size_t kLargeBuffer = 1 << 20;
constexpr auto kTrimInterval = std::chrono::seconds(1);

std::chrono::microseconds Us(Micros us) { return std::chrono::microseconds(us); }

}  // namespace

struct Server::Impl {
  Handler handler;
  ServerOptions options;
  std::string host;
  int port = 0;
  int listen_fd = -1;
  int epoll_fd = -1;
  int wake_fd = -1;
  std::shared_ptr<ServerStats> stats_owner = std::make_shared<ServerStats>();
  ServerStats& stats = *stats_owner;
  std::atomic<bool> stopping{false};

  // Answers from the workers, taken by the loop.
  struct Done {
    std::uint64_t key;
    std::string bytes;
    bool close;
    // Set on the head and each part of a streamed response but its last chunk: the worker
    // waits on it for the part to be written.
    std::shared_ptr<PartGate> gate;
    bool cut = false;  // a streamed response that failed midway: close without more
  };
  std::mutex done_mu;
  std::vector<Done> done;
  JobQueue ordinary, probes;

  // The loop thread's own state.
  std::unordered_map<std::uint64_t, std::unique_ptr<Connection>> connections;
  std::uint64_t next_key = 2;
  std::optional<TimePoint> accept_paused_until;
  std::size_t bodies_reserved = 0;  // Σ of the connections' body_reserved
  // A large buffer was let go: glibc keeps such memory mapped unless asked (issue 58: the
  // webhook stayed at 1.1 GB after the stalled bodies closed). Asked at most once a second:
  // trimming walks the whole heap, and the loop answers every connection.
  bool trim_memory = false;
  TimePoint last_trim;

  ~Impl() {
    for (int fd : {listen_fd, epoll_fd, wake_fd})
      if (fd >= 0) ::close(fd);
  }

  // Waiting for its worker: no deadline, nothing read.
  static bool Answering(const Connection& c) {
    return c.state == Connection::State::kHandling || c.state == Connection::State::kStreaming;
  }

  void Wake() const {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(wake_fd, &one, sizeof one);
  }

  void Watch(Connection& c, std::uint32_t events) const {
    if (c.interest == events) return;
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = c.key;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c.fd, &ev);
    c.interest = events;
  }

  void WatchListener(std::uint32_t events) const {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = kListenerKey;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_MOD, listen_fd, &ev);
  }

  void ReleaseBody(Connection& c) {
    bodies_reserved -= c.body_reserved;
    c.body_reserved = 0;
  }

  // Frees what `buffer` holds beyond its text when that is large (a request's remainder).
  void Shrink(std::string& buffer) {
    if (buffer.capacity() < kLargeBuffer) return;
    buffer.shrink_to_fit();
    trim_memory = true;
  }

  // Frees `buffer` whole, asking for the memory back when it was large.
  void LetGo(std::string& buffer) {
    if (buffer.capacity() >= kLargeBuffer) trim_memory = true;
    std::string().swap(buffer);
  }

  void Close(std::uint64_t key) {
    auto it = connections.find(key);
    if (it == connections.end()) return;
    ReleaseBody(*it->second);
    if (it->second->gate) it->second->gate->Gone();  // its worker stops making parts
    LetGo(it->second->in);
    LetGo(it->second->out);
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, it->second->fd, nullptr);
    if (it->second->ssl != nullptr) SSL_free(it->second->ssl);
    ::close(it->second->fd);
    connections.erase(it);
  }

  // Frees the slot of the connection that has waited longest for a request; false when every
  // connection is busy with one.
  bool EvictOldestWaiting() {
    Connection* oldest = nullptr;
    for (auto& [key, c] : connections) {
      if (c->state != Connection::State::kReading && c->state != Connection::State::kDraining)
        continue;
      if (oldest == nullptr || c->waiting_since < oldest->waiting_since) oldest = c.get();
    }
    if (oldest == nullptr) return false;
    stats.connections_evicted.fetch_add(1, std::memory_order_relaxed);
    Close(oldest->key);
    return true;
  }

  void Accept(TimePoint now) {
    for (;;) {
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          if (EvictOldestWaiting()) continue;
          WatchListener(0);  // out of descriptors with every connection busy: wait a little
          accept_paused_until = now + kAcceptPause;
        }
        return;  // EAGAIN, or an error the next readiness retries
      }
      if (connections.size() >= options.max_connections && !EvictOldestWaiting()) {
        ::close(fd);  // every slot is busy answering: refuse rather than queue unboundedly
        continue;
      }
      const int yes = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
      auto c = std::make_unique<Connection>();
      c->key = next_key++;
      c->fd = fd;
      c->waiting_since = now;
      c->deadline = now + Us(options.request_timeout_us);  // a silent new connection is cut soon
      c->interest = EPOLLIN;
      if (options.tls) {
        c->ssl = SSL_new(options.tls.get());
        if (c->ssl == nullptr || SSL_set_fd(c->ssl, fd) != 1) {
          if (c->ssl != nullptr) SSL_free(c->ssl);
          ::close(fd);
          continue;
        }
        SSL_set_accept_state(c->ssl);
      }
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = c->key;
      if (::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        if (c->ssl != nullptr) SSL_free(c->ssl);
        ::close(fd);
        continue;
      }
      stats.connections_accepted.fetch_add(1, std::memory_order_relaxed);
      connections.emplace(c->key, std::move(c));
    }
  }

  void Read(Connection& c, TimePoint now) {
    // A connection never buffers more than one request at its limits: the rest waits in the
    // kernel until this one is answered.
    const std::size_t cap = options.limits.max_head_bytes + options.limits.max_body_bytes + 4;
    char buf[16384];
    // At most 64 reads a wake-up: a client that floods cannot keep the loop from the others
    // (level-triggered epoll reports it again).
    for (int reads = 0; reads < 64 && c.in.size() <= cap; ++reads) {
      std::size_t n = 0;
      const Io io = Receive(c, buf, sizeof buf, n);
      if (io == Io::kMoved) {
        if (c.state == Connection::State::kDraining) continue;  // discarded
        c.in.append(buf, n);
        if (!c.request_started) {
          c.request_started = true;
          c.deadline = now + Us(options.request_timeout_us);
        }
        continue;
      }
      if (io == Io::kEof) {
        c.peer_closed = true;
        break;
      }
      if (io == Io::kWouldBlock) break;
      if (c.ssl != nullptr && SSL_is_init_finished(c.ssl) == 0)
        stats.tls_handshakes_failed.fetch_add(1, std::memory_order_relaxed);
      Close(c.key);  // reset by the peer, a failed handshake, or another socket error
      return;
    }
    if (c.state == Connection::State::kReading)
      Watch(c, EPOLLIN | (c.tls_wants_other ? EPOLLOUT : 0u));
    if (c.state == Connection::State::kDraining) {
      if (c.peer_closed) Close(c.key);
      return;
    }
    Advance(c, now);
  }

  // Holds `bytes` of the pending-body budget for `c`'s request; when they would pass it, answers
  // 503 with Retry-After, closes after, and returns false.
  bool ReserveBody(Connection& c, std::size_t bytes, TimePoint now) {
    if (bytes <= c.body_reserved) return true;
    const std::size_t more = bytes - c.body_reserved;
    if (bodies_reserved + more <= options.max_pending_body_bytes) {
      bodies_reserved += more;
      c.body_reserved += more;
      return true;
    }
    stats.requests_refused.fetch_add(1, std::memory_order_relaxed);
    ReleaseBody(c);
    LetGo(c.in);
    Response busy =
        TextResponse(503, "the server is holding other requests' bodies; send this one again soon");
    busy.headers.emplace_back("Retry-After", "1");
    StartWrite(c, Serialize(busy, {.keep_alive = false}), /*close=*/true, now);
    return false;
  }

  // Parses what `c` has buffered: dispatches a whole request, refuses a bad one.
  void Advance(Connection& c, TimePoint now) {
    if (c.state != Connection::State::kReading) return;
    ParseOutcome parsed = ParseRequest(c.in, options.limits);
    switch (parsed.kind) {
      case ParseOutcome::Kind::kIncomplete:
        if (c.peer_closed) {
          Close(c.key);
          return;
        }
        ReserveBody(c, parsed.pending_body_bytes, now);
        return;
      case ParseOutcome::Kind::kRefused:
        stats.requests_refused.fetch_add(1, std::memory_order_relaxed);
        c.in.clear();
        StartWrite(c, Serialize(TextResponse(parsed.status, parsed.reason), {.keep_alive = false}),
                   /*close=*/true, now);
        return;
      case ParseOutcome::Kind::kComplete:
        // Held until answered, so counted as a body still coming is.
        if (!ReserveBody(c, parsed.request.body.size(), now)) return;
        break;
    }
    c.in.erase(0, parsed.consumed);
    Shrink(c.in);
    c.state = Connection::State::kHandling;
    c.request_started = false;
    Watch(c, 0);  // nothing more is read until this request is answered
    const bool probe = options.probe_paths.count(parsed.request.path) != 0;
    (probe ? probes : ordinary).Push(Job{c.key, std::move(parsed.request)});
  }

  void StartWrite(Connection& c, std::string bytes, bool close, TimePoint now) {
    ReleaseBody(c);  // the request it answers is done with
    c.out = std::move(bytes);
    c.sent = 0;
    c.state = Connection::State::kWriting;
    c.close_after_write = close || c.peer_closed;
    c.write_started = now;
    c.deadline = now + Us(options.write_timeout_us);
    Write(c, now);
  }

  // The write deadline after `sent` bytes: the timeout from the start, plus a second for each
  // min_write_bytes_per_second written.
  TimePoint WriteDeadline(const Connection& c) const {
    const std::size_t rate = std::max<std::size_t>(1, options.min_write_bytes_per_second);
    return c.write_started + Us(options.write_timeout_us) +
           std::chrono::duration_cast<SteadyClock::duration>(
               std::chrono::duration<double>(static_cast<double>(c.sent) / rate));
  }

  void Write(Connection& c, TimePoint now) {
    while (c.sent < c.out.size()) {
      std::size_t n = 0;
      const Io io = Send(c, std::string_view(c.out).substr(c.sent), n);
      if (io == Io::kMoved) {
        c.sent += n;
        c.deadline = WriteDeadline(c);
        continue;
      }
      if (io == Io::kWouldBlock) {
        Watch(c, EPOLLOUT | (c.tls_wants_other ? EPOLLIN : 0u));
        return;
      }
      Close(c.key);
      return;
    }
    LetGo(c.out);
    if (c.gate) {  // a part of a streamed response: its worker makes the next
      c.state = Connection::State::kStreaming;
      Watch(c, 0);
      c.gate->Written();
      return;
    }
    if (c.close_after_write) {
      if (c.peer_closed) {
        Close(c.key);
        return;
      }
      if (c.ssl != nullptr) SSL_shutdown(c.ssl);  // close_notify, best effort
      ::shutdown(c.fd, SHUT_WR);
      c.state = Connection::State::kDraining;
      c.waiting_since = now;
      c.deadline = now + kDrainTime;
      Watch(c, EPOLLIN);
      return;
    }
    c.state = Connection::State::kReading;
    c.waiting_since = now;
    c.request_started = !c.in.empty();  // a pipelined request already waiting
    c.deadline = now + Us(c.request_started ? options.request_timeout_us : options.idle_timeout_us);
    Watch(c, EPOLLIN);
    // Bytes TLS has already decrypted raise no epoll event: read them now.
    if (c.ssl != nullptr && SSL_pending(c.ssl) > 0) {
      Read(c, now);
      return;
    }
    Advance(c, now);
  }

  void TakeDone(TimePoint now) {
    std::vector<Done> answers;
    {
      std::lock_guard lock(done_mu);
      answers.swap(done);
    }
    for (Done& d : answers) {
      auto it = connections.find(d.key);
      const bool waiting =
          it != connections.end() && (it->second->state == Connection::State::kHandling ||
                                      it->second->state == Connection::State::kStreaming);
      if (!waiting) {  // the client went away while its request was handled
        if (d.gate) d.gate->Gone();
        continue;
      }
      Connection& c = *it->second;
      if (d.cut) {
        Close(d.key);
        continue;
      }
      if (c.state == Connection::State::kHandling)
        stats.requests_answered.fetch_add(1, std::memory_order_relaxed);
      c.gate = std::move(d.gate);
      StartWrite(c, std::move(d.bytes), d.close, now);
    }
  }

  void ExpireDeadlines(TimePoint now) {
    std::vector<std::uint64_t> expired;
    for (auto& [key, c] : connections) {
      if (Answering(*c) || c->deadline > now) continue;
      if (c->state == Connection::State::kReading && c->request_started)
        stats.requests_timed_out.fetch_add(1, std::memory_order_relaxed);
      expired.push_back(key);
    }
    for (std::uint64_t key : expired) Close(key);
    if (accept_paused_until && *accept_paused_until <= now) {
      accept_paused_until.reset();
      WatchListener(EPOLLIN);
    }
  }

  int WaitMillis(TimePoint now) const {
    TimePoint next = now + std::chrono::seconds(1);
    for (const auto& [key, c] : connections)
      if (!Answering(*c)) next = std::min(next, c->deadline);
    if (accept_paused_until) next = std::min(next, *accept_paused_until);
    if (next <= now) return 0;
    return static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1);
  }

  void Work(JobQueue& queue) {
    while (std::optional<Job> job = queue.Pop()) {
      const Request& request = job->request;
      Response response;
      try {
        response = handler(request);
      } catch (const std::exception& e) {
        // The reason goes to the log, not to the client: an exception's text may name files,
        // addresses or a connection string (cpp-httplib sent it in a header, CVE-2026-28434).
        // The path quoted and escaped ({:?}): a decoded %0A must not forge a log line.
        std::cerr << fmt::format("error: {} {:?}: {}\n", request.method, request.path, e.what());
        response = TextResponse(500, "internal error (the reason is in the server's log)");
      } catch (...) {
        std::cerr << fmt::format("error: {} {:?}: an unknown exception\n", request.method,
                                 request.path);
        response = TextResponse(500, "internal error (the reason is in the server's log)");
      }
      std::string bytes = Serialize(response, {.head_only = request.method == "HEAD",
                                               .keep_alive = request.keep_alive,
                                               .gzip = request.accepts_gzip});
      if (response.stream && request.method != "HEAD" && FieldsAreSafe(response)) {
        Stream(job->key, std::move(bytes), response, request);
        continue;
      }
      Hand({job->key, std::move(bytes), !request.keep_alive});
    }
  }

  // Hands bytes to the loop for a connection.
  void Hand(Done d) {
    {
      std::lock_guard lock(done_mu);
      done.push_back(std::move(d));
    }
    Wake();
  }

  // Writes a streamed response: its head, then each part as a chunk once the one before it is
  // written, then the last chunk; cut (closed without it) when the stream fails.
  void Stream(std::uint64_t key, std::string head, const Response& response,
              const Request& request) {
    auto gate = std::make_shared<PartGate>();
    Hand({key, std::move(head), false, gate});
    bool whole = gate->Wait();
    if (whole) {
      try {
        whole = response.stream([&](std::string_view part) {
          if (part.empty()) return true;  // a zero-size chunk would end the body
          Hand({key, Chunk(part), false, gate});
          return gate->Wait();
        });
      } catch (const std::exception& e) {
        std::cerr << fmt::format("error: {} {:?}: {}\n", request.method, request.path, e.what());
        whole = false;
      }
    }
    if (whole)
      Hand({key, std::string(kLastChunk), !request.keep_alive});
    else
      Hand({key, std::string(), true, nullptr, /*cut=*/true});
  }

  void Loop() {
    std::vector<std::thread> workers;
    for (int i = 0; i < std::max(1, options.workers); ++i)
      workers.emplace_back([this] { Work(ordinary); });
    workers.emplace_back([this] { Work(probes); });

    std::vector<epoll_event> events(64);
    while (!stopping.load()) {
      const int n = ::epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()),
                                 WaitMillis(SteadyClock::now()));
      const TimePoint now = SteadyClock::now();
      for (int i = 0; i < n; ++i) {
        const std::uint64_t key = events[i].data.u64;
        const std::uint32_t ev = events[i].events;
        if (key == kListenerKey) {
          Accept(now);
          continue;
        }
        if (key == kWakeKey) {
          std::uint64_t count = 0;
          [[maybe_unused]] const auto r = ::read(wake_fd, &count, sizeof count);
          TakeDone(now);
          continue;
        }
        auto it = connections.find(key);
        if (it == connections.end()) continue;
        Connection& c = *it->second;
        switch (c.state) {
          case Connection::State::kReading:
          case Connection::State::kDraining:
            Read(c, now);
            break;
          case Connection::State::kWriting:
            Write(c, now);
            break;
          case Connection::State::kHandling:
          case Connection::State::kStreaming:
            if ((ev & (EPOLLHUP | EPOLLERR)) != 0) Close(key);  // its answer will be dropped
            break;
        }
      }
      ExpireDeadlines(now);
      if (trim_memory && now - last_trim >= kTrimInterval) {
        trim_memory = false;
        last_trim = now;
        malloc_trim(0);
      }
    }

    std::vector<std::uint64_t> keys;
    for (const auto& [key, c] : connections) keys.push_back(key);
    for (std::uint64_t key : keys) Close(key);
    ordinary.Stop();
    probes.Stop();
    for (std::thread& t : workers) t.join();
  }
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() { Stop(); }

Result<std::unique_ptr<Server>> Server::Bind(const std::string& listen, Handler handler,
                                             ServerOptions options) {
  auto addr = ParseListen(listen);
  if (!addr) return addr.error();
  auto socket = ListenTcp(addr->first, addr->second, kListenBacklog,
                          fmt::format("{} '{}'", options.flag, listen));
  if (!socket) return socket.error();
  if (options.tls)  // writes resume where a partial one stopped, from a buffer that may move
    SSL_CTX_set_mode(options.tls.get(),
                     SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  auto impl = std::make_unique<Impl>();
  impl->handler = std::move(handler);
  impl->options = std::move(options);
  impl->host = addr->first;
  impl->port = socket->port;
  impl->listen_fd = socket->fd;
  impl->epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  impl->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (impl->epoll_fd < 0 || impl->wake_fd < 0)
    return Internal(fmt::format("--listen '{}': cannot create the event loop: {}", listen,
                                std::strerror(errno)));
  for (const auto& [fd, key] :
       {std::pair{impl->listen_fd, kListenerKey}, std::pair{impl->wake_fd, kWakeKey}}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = key;
    if (::epoll_ctl(impl->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0)
      return Internal(fmt::format("--listen '{}': epoll_ctl: {}", listen, std::strerror(errno)));
  }
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

int Server::port() const { return impl_->port; }
const std::string& Server::host() const { return impl_->host; }
std::shared_ptr<const ServerStats> Server::stats() const { return impl_->stats_owner; }

void Server::Serve() {
  if (impl_->stopping.load()) return;
  impl_->Loop();
}

void Server::Stop() {
  if (!impl_) return;
  impl_->stopping.store(true);
  impl_->Wake();
}

}  // namespace gpuledger::http
