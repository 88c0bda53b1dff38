#pragma once
// A streamed response's parts between the worker that makes them and the event loop that writes
// them (server.cc): the worker hands a part over and waits until the loop has written it, so a
// client that stops reading holds one part of the body in the server, never the rest of it; and
// it learns when the client is gone, so it stops making them.

#include <condition_variable>
#include <mutex>

namespace gpuledger::http {

class PartGate {
 public:
  // The loop: the part handed over is written.
  void Written() {
    std::lock_guard lock(mu_);
    written_ = true;
    cv_.notify_all();
  }
  // The loop: the connection is closed; every wait from now on returns false at once.
  void Gone() {
    std::lock_guard lock(mu_);
    gone_ = true;
    cv_.notify_all();
  }
  // The worker: waits until the part handed over is written (true) or the client is gone
  // (false).
  bool Wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return written_ || gone_; });
    written_ = false;
    return !gone_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool written_ = false;
  bool gone_ = false;
};

}  // namespace gpuledger::http
