#pragma once
// Who uses a GPU: a container of a pod, or (outside Kubernetes, or a process in no pod) a host
// consumer such as a Unix user or a systemd unit.

#include <compare>
#include <map>
#include <optional>
#include <string>

#include "common/ids.h"
#include "common/units.h"

namespace gpuledger {

// Namespace given to consumers that are not Kubernetes containers. The pod field then names
// the consumer ("user:alice", "unit:jupyter.service", "pid:4242 (python3)").
inline constexpr std::string_view kHostNamespace = "__host__";
// Namespace of a process in a container the runtime does not know yet (the agent refreshes
// its view and resolves it in a later cycle); the pod field is "pod-<uid>".
inline constexpr std::string_view kUnresolvedNamespace = "__unresolved__";

struct ConsumerRef {
  std::string namespace_name;
  std::string pod;
  PodUid pod_uid;
  std::string container;

  auto operator<=>(const ConsumerRef&) const = default;
  bool IsHost() const { return namespace_name == kHostNamespace; }
  // "namespace/pod/container": the key `report --by container` prints.
  std::string Key() const { return namespace_name + "/" + pod + "/" + container; }
};

using LabelMap = std::map<std::string, std::string>;

// Metadata that reports aggregate by; not needed to attribute.
struct ConsumerInfo {
  ConsumerRef ref;
  std::string owner_kind;  // top controller: Deployment, StatefulSet, Job, CronJob, ... or "Pod"
  std::string owner_name;
  LabelMap labels;            // pod labels
  LabelMap namespace_labels;  // inherited when the pod lacks a key
  // A GPU share the pod's annotations declare (KAI/Run:ai "gpu-fraction", "gpu-memory"): the
  // server applies it to the pod's rows (attribution/annotated_shares.h). Unset: none.
  std::optional<double> annotated_gpu_fraction;  // (0, 1]
  std::optional<Bytes> annotated_gpu_memory_bytes;
};

// A consumer's label sets, where they may be kept apart from it (ledger::Snapshot keeps each
// distinct set once: the replicas of a workload share one, a namespace's pods another).
struct ConsumerLabels {
  const LabelMap& labels;
  const LabelMap& namespace_labels;
  // The value of label `key`: the pod's, else its namespace's; nullptr when neither has it.
  const std::string* Find(const std::string& key) const {
    if (auto it = labels.find(key); it != labels.end()) return &it->second;
    if (auto it = namespace_labels.find(key); it != namespace_labels.end()) return &it->second;
    return nullptr;
  }
};
inline ConsumerLabels LabelsOf(const ConsumerInfo& c) { return {c.labels, c.namespace_labels}; }

}  // namespace gpuledger
