#include "model/finding.h"
#include "common/enum_names.h"

#include <array>
#include <utility>

namespace gpuledger {
namespace {

constexpr NameTable<FindingKind, kFindingKinds> kKinds = {
    {{FindingKind::kUnallocatedAccess, "unallocated-access"},
     {FindingKind::kUnmanagedProcess, "unmanaged-process"},
     {FindingKind::kVisibleDevicesOverride, "visible-devices-override"},
     {FindingKind::kMemoryOversubscribed, "memory-oversubscribed"},
     {FindingKind::kIsolationBreach, "isolation-breach"},
     {FindingKind::kStaleGrant, "stale-grant"},
     {FindingKind::kIdleAllocation, "idle-allocation"},
     {FindingKind::kPodSetsVisibleDevices, "pod-sets-visible-devices"},
     {FindingKind::kPrivilegedWithoutRequest, "privileged-without-gpu-request"},
     {FindingKind::kKernelTimeMismatch, "kernel-time-mismatch"}}};

constexpr NameTable<Severity, 3> kSeverities = {{
    {Severity::kInfo, "info"},
    {Severity::kWarning, "warning"},
    {Severity::kCritical, "critical"},
}};

}  // namespace

std::string_view ToString(FindingKind kind) { return NameIn(kKinds, kind, "unknown"); }

std::optional<FindingKind> ParseFindingKind(std::string_view text) { return ValueIn(kKinds, text); }

bool IsAdmissionKind(FindingKind kind) {
  return kind == FindingKind::kPodSetsVisibleDevices ||
         kind == FindingKind::kPrivilegedWithoutRequest;
}

std::string_view ToString(Severity severity) { return NameIn(kSeverities, severity, "unknown"); }

std::optional<Severity> ParseSeverity(std::string_view text) { return ValueIn(kSeverities, text); }

std::vector<std::pair<std::string, std::string>> EvidencePairs(std::string_view evidence) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t at = 0;
  while (at < evidence.size()) {
    std::size_t end = evidence.find(' ', at);
    if (end == std::string_view::npos) end = evidence.size();
    std::string_view pair = evidence.substr(at, end - at);
    if (auto eq = pair.find('='); eq != std::string_view::npos && eq > 0)
      out.emplace_back(pair.substr(0, eq), pair.substr(eq + 1));
    at = end + 1;
  }
  return out;
}

std::string EvidenceValue(std::string_view evidence, std::string_view key) {
  for (auto& [k, v] : EvidencePairs(evidence))
    if (k == key) return std::move(v);
  return {};
}

}  // namespace gpuledger
