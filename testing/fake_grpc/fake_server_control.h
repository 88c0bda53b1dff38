#pragma once
// Shared controls of the fake gRPC servers: scripted failures, hangs and call counts.
// Thread-safe: tests and `gpuledger-sim-node` change them while calls are in flight.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

namespace gpuledger::fake {

class ServerControl {
 public:
  // The next n calls (any method) answer RESOURCE_EXHAUSTED, as a rate-limited kubelet does.
  void FailResourceExhausted(int n);
  // While on, calls block until it is turned off, the caller gives up (deadline/cancel) or the
  // server stops; a hung call then answers DEADLINE_EXCEEDED/CANCELLED/UNAVAILABLE.
  void SetHang(bool hang);
  // Calls that reached the server, counted before any scripted failure or hang.
  int calls() const { return calls_.load(); }
  void ResetCalls() { calls_ = 0; }

  // Server side: count the call, then hang or fail as scripted. ok() means "answer normally".
  grpc::Status Enter(grpc::ServerContext* context);
  // Release hung calls and refuse new ones until Reopen() (used by Stop / Start).
  void Close();
  void Reopen();

 private:
  std::atomic<int> calls_{0};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int exhausted_left_ = 0;  // guarded by mu_
  bool hang_ = false;       // guarded by mu_
  bool closed_ = false;     // guarded by mu_
};

}  // namespace gpuledger::fake
