#pragma once
// Kubernetes Events for guardrail findings (design section 5: findings "are
// metrics, API objects and Kubernetes Events"): a Warning Event on the pod of
// each open finding whose kind's action is warn (or deny), so `kubectl describe
// pod` and anything watching Events sees it.
//
// Deduplication survives restarts. An Event's name is derived from the finding
// alone,
// "<pod>.gpuledger-<16 hex of a stable hash of Finding::Key()>", and the API
// server refuses a second create of a name (409 AlreadyExists), which counts as
// announced. An open finding is announced again every policy.event_repeat_us
// after its first_seen: the n-th repeat is a new Event named as above plus
// "-<n>" (a new object, not a PATCH of the count: a restarted server computes
// the same n and gets 409, and no read-modify-write is needed). A server that
// was down for several periods announces only the current one. event_repeat_us
// <= 0: announced once.
//
// At most policy.events_per_minute POSTs in any rolling minute (successful or
// not); findings over the limit wait for a later Publish call, in the order
// given. A failed POST (network, 401, 403 for missing RBAC, 422) leaves the
// finding unannounced, so a later call retries it.
//
// Thread-safety: Publish from one thread at a time; RenderMetrics from any
// thread.

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <span>
#include <string>

#include "common/result.h"
#include "common/units.h"
#include "guardrails/policy.h"
#include "guardrails/price_findings.h"
#include "k8s/api_transport.h"
#include "model/finding.h"

namespace gpuledger::server {

class FindingEvents {
 public:
  // `transport` must outlive this object; the policy is copied. `now` is the
  // wall clock in µs (simulated in tests).
  FindingEvents(k8s::ApiTransport& transport, const guardrails::Policy& policy,
                std::function<Micros()> now);

  // Announces what is due among `open` (every finding open now: keys not in it
  // are forgotten, so memory stays bounded by the open findings). Resolved
  // findings, findings whose kind is not at warn or deny, and subjects that are
  // not pods (host consumers, whole devices) are skipped. Returns the first
  // failed POST's error (kUnavailable, naming the request and the server's
  // answer) with how many failed; every outcome is counted for RenderMetrics.
  Status Publish(std::span<const guardrails::PricedFinding> open);

  // gpuledger_server_events_total{result="created|exists|error|deferred"};
  // "deferred" counts each time a due Event waited for a later call because of
  // the rate limit.
  std::string RenderMetrics() const;

 private:
  bool Announces(const Finding& finding) const;
  std::int64_t RepeatNumber(const Finding& finding, Micros now_us) const;

  k8s::ApiTransport& transport_;
  const guardrails::Policy policy_;
  const std::function<Micros()> now_;
  std::map<Finding::KeyType, std::int64_t> announced_;  // key -> repeat number announced last
  std::deque<Micros> recent_posts_;                     // POST times within the last minute

  std::atomic<std::uint64_t> created_{0};
  std::atomic<std::uint64_t> exists_{0};
  std::atomic<std::uint64_t> errors_{0};
  std::atomic<std::uint64_t> deferred_{0};
};

// The Event's metadata.name for the `repeat`-th announcement of `finding` (0:
// the first).
std::string FindingEventName(const Finding& finding, std::int64_t repeat);

// The core/v1 Event JSON body for that announcement.
std::string FindingEventBody(const guardrails::PricedFinding& priced, std::int64_t repeat);

}  // namespace gpuledger::server
