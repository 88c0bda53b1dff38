#pragma once
// The server's Events loop: every `interval` it reads the ledger's open findings (those seen in
// the last day, priced over it; ledger/findings.h) and hands them to FindingEvents,
// which posts what is due. Failures (ledger busy, API server unreachable, RBAC missing) are
// logged once per change of state and retried at the next round; they never stop the server.

#include <condition_variable>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>

#include "guardrails/policy.h"
#include "ledger/read_service.h"
#include "server/connection_pool.h"
#include "server/finding_events.h"

namespace gpuledger::server {

class FindingEventsLoop {
 public:
  // `transport` is this loop's own (transports are not thread-safe); `log` must outlive it.
  FindingEventsLoop(StoreOpener open, std::unique_ptr<k8s::ApiTransport> transport,
                    guardrails::Policy policy, std::function<Micros()> now, Micros interval_us,
                    std::ostream& log);
  ~FindingEventsLoop();  // Stop()

  void Start();
  void Stop();
  // One round on the caller's thread: the first error, if any.
  Status RunOnce();
  // FindingEvents' series. Thread-safe.
  std::string RenderMetrics() const { return events_.RenderMetrics(); }

 private:
  StoreOpener open_;
  std::unique_ptr<k8s::ApiTransport> transport_;
  guardrails::Policy policy_;
  FindingEvents events_;
  Micros interval_us_;
  std::ostream& log_;
  // Each round reads the last day's rows: kept, and brought up to the ledger by the hours
  // written since the last round.
  ledger::ReadService reads_{{.snapshot_days = 1, .held_days = 0}};
  std::string last_error_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
};

}  // namespace gpuledger::server
