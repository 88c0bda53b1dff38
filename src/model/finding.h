#pragma once
// Guardrail findings (design section 5): what was granted against what really runs. The agent
// detects the runtime kinds on its node (guardrails/detect.h); the server keeps them with their
// history in the ledger, adds idle-allocation from the ledger's rows, and prices each one
// (guardrails/price_findings.h). The admission kinds are what the validating webhook judges.

#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "common/units.h"
#include "model/consumer.h"

namespace gpuledger {

enum class FindingKind {
  // Runtime kinds (agent).
  kUnallocatedAccess,       // a container's process on a device it was not granted
  kUnmanagedProcess,        // a GPU process in no pod on a Kubernetes node
  kVisibleDevicesOverride,  // NVIDIA_/CUDA_VISIBLE_DEVICES "all" or naming devices not granted
  kMemoryOversubscribed,    // sharers together near the device's memory; one over its fraction
  kIsolationBreach,         // measured above a declared MPS/fractional limit, sustained
  kStaleGrant,              // the kubelet lists a grant of a pod that is not running
  // Server kind (from the ledger's hourly rows).
  kIdleAllocation,  // granted and unused for hours
  // Admission kinds (webhook).
  kPodSetsVisibleDevices,     // a pod sets NVIDIA_VISIBLE_DEVICES / NVIDIA_DRIVER_CAPABILITIES
  kPrivilegedWithoutRequest,  // privileged (sees every device) and requests no GPU
  // Runtime kind (agent), appended so the others keep their index: a process whose published
  // kernel time is far below what NVML saw it run (issue 31), sustained.
  kKernelTimeMismatch,
};
inline constexpr int kFindingKinds = 10;

// "unallocated-access", "unmanaged-process", "visible-devices-override",
// "memory-oversubscribed", "isolation-breach", "stale-grant", "idle-allocation",
// "pod-sets-visible-devices", "privileged-without-gpu-request".
std::string_view ToString(FindingKind kind);
std::optional<FindingKind> ParseFindingKind(std::string_view text);
bool IsAdmissionKind(FindingKind kind);

enum class Severity { kInfo, kWarning, kCritical };
std::string_view ToString(Severity severity);  // "info", "warning", "critical"
std::optional<Severity> ParseSeverity(std::string_view text);

// One finding. The subject is a container (namespace, pod, pod UID, container), a host consumer
// (namespace kHostNamespace, pod "user:alice" / "pid:42"), or, for a finding about a device as a
// whole (its sharers together over its memory), empty: the device says it.
struct Finding {
  FindingKind kind = FindingKind::kUnallocatedAccess;
  Severity severity = Severity::kWarning;
  std::string cluster;
  std::string node;
  ConsumerRef subject;
  std::string gpu_uuid;  // the physical GPU or MIG instance the finding is about
  // The workload the subject runs in ("namespace/Kind/name", report::WorkloadOf) where the
  // ledger's rows name it (idle-allocation); "" otherwise. Rightsizing's advice for the same
  // workload links its findings by it.
  std::string workload;
  // What was seen, as space-separated key=value pairs (docs/guardrails.md lists the keys):
  // "pids=4242 granted=none NVIDIA_VISIBLE_DEVICES=all memory_bytes=2147483648".
  std::string evidence;
  Micros first_seen_us = 0;
  Micros last_seen_us = 0;
  std::optional<Micros> resolved_us;  // unset: still open

  // Identity across scrapes and restarts of the server: a finding that resolves and comes back
  // is a new one (another first_seen). A copy, safe to keep as a map key.
  using KeyType =
      std::tuple<std::string, std::string, FindingKind, ConsumerRef, std::string, Micros>;
  KeyType Key() const { return {cluster, node, kind, subject, gpu_uuid, first_seen_us}; }
  bool operator==(const Finding&) const = default;
};

// A Finding's evidence as its (key, value) pairs, in order; a word without '=' is skipped.
std::vector<std::pair<std::string, std::string>> EvidencePairs(std::string_view evidence);
// The value of `key` in a Finding's evidence ("" when absent).
std::string EvidenceValue(std::string_view evidence, std::string_view key);

}  // namespace gpuledger
