#pragma once
// The agent's guardrails (design section 5): per cycle, what was granted against what really
// runs on this node, and the findings that follow over time. Pure: a snapshot and its
// attribution in, observations out; the tracker adds tolerance windows, first and last seen,
// and resolution.
//
// What is observed (docs/guardrails.md has the evidence keys):
//   unallocated-access        a container's process on a device none of its grants covers
//                             (a pod with no GPU request has no grant at all)
//   unmanaged-process         on a Kubernetes node, a GPU process in no container (an MPS
//                             control daemon is the sharing layer's own, not a finding)
//   visible-devices-override  a container's process with NVIDIA_VISIBLE_DEVICES=all, or with
//                             NVIDIA_/CUDA_VISIBLE_DEVICES naming a device not granted to it
//                             (indices name the node's GPUs in NVML order; "void", "none",
//                             empty and the device plugin's volume-mount path say nothing)
//   memory-oversubscribed     on a shared GPU (time-slicing, MPS, fractional, DRA): the memory
//                             in use at or above memory_together_fraction of the card (the
//                             device is the subject), or one sharer holding more than its
//                             share of the card plus memory_fair_margin (its allocation share;
//                             a declared memory cap is isolation-breach's instead)
//   isolation-breach          memory above a declared cap (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT,
//                             HAMi's CUDA_DEVICE_MEMORY_LIMIT, gpu-mem), or a measured compute
//                             share above the declared one by isolation_compute_margin
//   stale-grant               a grant the kubelet lists for a pod that is not running
// Observations of exempt namespaces (Policy::Exempt; the agent knows no labels, the server
// applies label exemptions) and of kinds that are off are not made.

#include <map>
#include <string>
#include <vector>

#include "guardrails/policy.h"
#include "model/finding.h"
#include "model/snapshot.h"
#include "model/usage.h"

namespace gpuledger::guardrails {

// One condition seen in one cycle.
struct Observation {
  FindingKind kind = FindingKind::kUnallocatedAccess;
  ConsumerRef subject;
  std::string gpu_uuid;
  std::string evidence;
  // How bad it was (bytes, or a share): the tracker keeps the evidence of the worst cycle.
  double magnitude = 0;
};

// `kubernetes_node`: the node has a kubelet (host processes are then unmanaged). `usage` is
// Attribute(snapshot).
std::vector<Observation> Observe(const NodeSnapshot& snapshot,
                                 const std::vector<DeviceUsage>& usage, const Policy& policy,
                                 bool kubernetes_node);

// Findings over time. A condition becomes a finding once it held continuously for its kind's
// tolerance (isolation-breach and memory-oversubscribed: isolation_tolerance_us; stale-grant:
// stale_grant_tolerance_us; the others at once); first seen is when the condition began. It
// resolves once absent for resolve_after_us, and stays listed as resolved for
// `keep_resolved_us` so a scraper that comes by less often still sees it end. State is the
// open and recently resolved findings only: bounded by what is on the node.
// Not thread-safe (the collector thread).
class FindingTracker {
 public:
  FindingTracker(Policy policy, std::string node, Micros keep_resolved_us);

  // One cycle's observations over [start_us, end_us).
  void Update(const std::vector<Observation>& observations, Micros start_us, Micros end_us);

  // Open findings and those resolved within keep_resolved_us, in key order.
  std::vector<Finding> Current() const;
  // Findings opened since this tracker started, per kind.
  const std::map<FindingKind, std::int64_t>& opened_total() const { return opened_total_; }
  const Policy& policy() const { return policy_; }

 private:
  struct Key {
    FindingKind kind;
    ConsumerRef subject;
    std::string gpu_uuid;
    auto operator<=>(const Key&) const = default;
  };
  struct State {
    Micros since_us = 0;      // the condition began
    Micros last_seen_us = 0;  // end of the last cycle that saw it
    bool open = false;
    double worst = -1;
    std::string evidence;
    std::optional<Micros> resolved_us;
  };
  Micros Tolerance(FindingKind kind) const;

  Policy policy_;
  std::string node_;
  Micros keep_resolved_us_;
  std::map<Key, State> states_;
  std::map<FindingKind, std::int64_t> opened_total_;
};

}  // namespace gpuledger::guardrails
