#include "guardrails/policy.h"
#include "common/enum_names.h"

#include <algorithm>

namespace gpuledger::guardrails {

constexpr NameTable<Action, 4> kActionNames = {{
    {Action::kOff, "off"},
    {Action::kReport, "report"},
    {Action::kWarn, "warn"},
    {Action::kDeny, "deny"},
}};

std::string_view ToString(Action action) { return NameIn(kActionNames, action, "unknown"); }

bool Policy::Exempt(FindingKind kind, const ConsumerRef& subject,
                    const std::map<std::string, std::string>& labels) const {
  for (const Exemption& e : exemptions) {
    if (!e.kinds.empty() && std::find(e.kinds.begin(), e.kinds.end(), kind) == e.kinds.end())
      continue;
    if (e.namespace_name.empty() && e.labels.empty()) continue;
    if (!e.namespace_name.empty() && e.namespace_name != subject.namespace_name) continue;
    bool all = std::all_of(e.labels.begin(), e.labels.end(), [&](const auto& kv) {
      auto it = labels.find(kv.first);
      return it != labels.end() && it->second == kv.second;
    });
    if (all) return true;
  }
  return false;
}

Policy DefaultPolicy() {
  // Misuse that takes GPU time from others warns (an Event on the pod); what may be a
  // deliberate setup (a host benchmark, a shared notebook) or is a risk, not a loss, is
  // reported. The webhook warns by default: denying is a decision for the operator.
  Policy p;
  auto set = [&](FindingKind k, Action a, Severity s) { p.For(k) = KindPolicy{a, s}; };
  set(FindingKind::kUnallocatedAccess, Action::kWarn, Severity::kCritical);
  set(FindingKind::kUnmanagedProcess, Action::kReport, Severity::kWarning);
  set(FindingKind::kVisibleDevicesOverride, Action::kWarn, Severity::kWarning);
  set(FindingKind::kMemoryOversubscribed, Action::kReport, Severity::kWarning);
  set(FindingKind::kIsolationBreach, Action::kWarn, Severity::kWarning);
  set(FindingKind::kStaleGrant, Action::kReport, Severity::kWarning);
  set(FindingKind::kIdleAllocation, Action::kReport, Severity::kInfo);
  set(FindingKind::kPodSetsVisibleDevices, Action::kWarn, Severity::kWarning);
  set(FindingKind::kPrivilegedWithoutRequest, Action::kWarn, Severity::kCritical);
  set(FindingKind::kKernelTimeMismatch, Action::kWarn, Severity::kWarning);
  return p;
}

}  // namespace gpuledger::guardrails
