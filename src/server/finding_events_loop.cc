#include "server/finding_events_loop.h"

#include <algorithm>
#include <chrono>

#include "ledger/findings.h"

namespace gpuledger::server {

FindingEventsLoop::FindingEventsLoop(StoreOpener open, std::unique_ptr<k8s::ApiTransport> transport,
                                     guardrails::Policy policy, std::function<Micros()> now,
                                     Micros interval_us, std::ostream& log)
    : open_(std::move(open)),
      transport_(std::move(transport)),
      policy_(std::move(policy)),
      events_(*transport_, policy_, std::move(now)),
      interval_us_(interval_us),
      log_(log) {}

FindingEventsLoop::~FindingEventsLoop() { Stop(); }

Status FindingEventsLoop::RunOnce() {
  auto store = open_();
  if (!store) return store.error();
  // Pricing reads a day of rows: only when an open finding may be announced at all (idle
  // allocations are found from those rows, so a policy that warns on them always reads).
  auto announces = [&](FindingKind kind) {
    const guardrails::Action a = policy_.For(kind).action;
    return a == guardrails::Action::kWarn || a == guardrails::Action::kDeny;
  };
  if (!announces(FindingKind::kIdleAllocation)) {
    store::FindingQuery open;
    open.open_only = true;
    auto recorded = (*store)->ReadFindings(open);
    if (!recorded) return recorded.error();
    if (std::none_of(recorded->begin(), recorded->end(),
                     [&](const Finding& f) { return announces(f.kind); }))
      return events_.Publish({});
  }
  auto extent = (*store)->Extent();
  if (!extent) return extent.error();
  if (extent->to_us <= extent->from_us) return events_.Publish({});  // nothing recorded yet
  ledger::FindingsQuery q;
  q.window = "24h";
  q.open_only = true;
  auto doc = ledger::ReadFindingsDocument(**store, reads_, q, policy_);
  if (!doc) return doc.error();
  return events_.Publish(doc->findings);
}

void FindingEventsLoop::Start() {
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      lock.unlock();
      Status s = RunOnce();
      const std::string error = s.ok() ? "" : s.error().message;
      if (error != last_error_) {
        log_ << (error.empty() ? "gpuledger server: events: posting again\n"
                               : "gpuledger server: events: " + error + " (retrying each round)\n");
        log_.flush();
        last_error_ = error;
      }
      lock.lock();
      cv_.wait_for(lock, std::chrono::microseconds(interval_us_), [this] { return stopping_; });
    }
  });
}

void FindingEventsLoop::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace gpuledger::server
