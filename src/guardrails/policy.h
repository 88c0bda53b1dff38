#pragma once
// The guardrail policy (docs/guardrails.md): per finding kind an action and a severity, the
// thresholds and tolerance windows of the detectors, exemptions, and how the webhook and the
// Kubernetes Events behave. The agent (detection), the server (idle-allocation, Events,
// pricing) and the webhook read the same file; DefaultPolicy() is what runs without one.
//
// Actions: off (not detected, not recorded), report (recorded and exposed), warn (report, and
// a Kubernetes Event on the pod; the webhook admits with a warning), deny (admission kinds
// only: the webhook rejects the pod; a running process cannot be denied, so the parser
// refuses deny for a runtime kind).

#include <array>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/units.h"
#include "model/consumer.h"
#include "model/finding.h"

namespace gpuledger::guardrails {

enum class Action { kOff, kReport, kWarn, kDeny };
std::string_view ToString(Action action);  // "off", "report", "warn", "deny"

struct KindPolicy {
  Action action = Action::kReport;
  Severity severity = Severity::kWarning;
};

// Exempts the subjects it matches from the kinds it lists (all kinds when empty): a namespace
// (exact), and/or pod labels (every pair must match). An exemption with neither matches
// nothing (the parser refuses it).
struct Exemption {
  std::string namespace_name;
  std::map<std::string, std::string> labels;
  std::vector<FindingKind> kinds;
  int line = 0;  // where the policy file declared it, for messages
};

// The mutating webhook's injection of the in-process kernel-time tracer (issue 31,
// webhook/kernel_time_patch.h): off unless the policy turns it on.
struct KernelTimeInjection {
  bool inject = false;
  std::set<std::string> namespaces;                       // every pod of these opts in
  std::string label = "gpuledger.io/kernel-time";         // or a pod labelled <label>=enabled
  std::string library_dir = "/opt/gpuledger/lib";         // on the node, from the DaemonSet
  std::string publish_dir = "/run/gpuledger/kerneltime";  // on the node: the agent's dir
};

struct Policy {
  std::array<KindPolicy, kFindingKinds> kinds{};  // indexed by FindingKind

  // memory-oversubscribed: the sharers of a device together at or above this fraction of its
  // memory; one sharer above its fair fraction (1/replicas, or its declared share of the GPU)
  // by more than memory_fair_margin of the device's memory.
  double memory_together_fraction = 0.95;
  double memory_fair_margin = 0.05;
  // isolation-breach: measured compute share above the declared one by more than this (of the
  // physical GPU), or memory above a declared cap, for longer than isolation_tolerance_us.
  double isolation_compute_margin = 0.05;
  Micros isolation_tolerance_us = 5 * 60 * kMicrosPerSecond;
  // stale-grant: a grant of a pod that is not running, listed for longer than this (a pod
  // being torn down lists its grant for a few seconds).
  Micros stale_grant_tolerance_us = 5 * 60 * kMicrosPerSecond;
  // idle-allocation: granted, with compute at most idle_compute_fraction of the allocation,
  // for at least idle_allocation_hours consecutive ledger hours.
  int idle_allocation_hours = 24;
  double idle_compute_fraction = 0.01;
  // A finding resolves once its condition has been absent this long (no flapping on one
  // missed sample).
  Micros resolve_after_us = 60 * kMicrosPerSecond;

  std::vector<Exemption> exemptions;

  // Webhook: when a pod cannot be judged (its object is not a pod the webhook can read),
  // fail-open admits it with a warning, fail-closed rejects it. Malformed AdmissionReviews are
  // HTTP errors either way; the API server then applies the webhook configuration's
  // failurePolicy.
  bool webhook_fail_open = true;
  KernelTimeInjection kernel_time;  // webhook.kernel_time

  // Kubernetes Events: one per finding (deduplicated: a finding that is still open is not
  // re-announced for event_repeat_us), at most events_per_minute in all.
  Micros event_repeat_us = kMicrosPerHour;
  int events_per_minute = 30;

  const KindPolicy& For(FindingKind kind) const { return kinds[static_cast<std::size_t>(kind)]; }
  KindPolicy& For(FindingKind kind) { return kinds[static_cast<std::size_t>(kind)]; }
  bool Enabled(FindingKind kind) const { return For(kind).action != Action::kOff; }
  // Whether `subject` (with its pod labels, when known) is exempt from `kind`.
  bool Exempt(FindingKind kind, const ConsumerRef& subject,
              const std::map<std::string, std::string>& labels = {}) const;
};

// Every kind at report or warn with its usual severity (docs/guardrails.md has the table).
Policy DefaultPolicy();

}  // namespace gpuledger::guardrails
