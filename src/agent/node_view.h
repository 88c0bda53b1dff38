#pragma once
// What the agent knows about one node in one cycle, joined from its sources, and the pure
// function that turns it into a NodeSnapshot for attribution.
//
// Joins: PodResources names (namespace, pod, container) and device ids but no pod UID; CRI
// gives container id -> sandbox -> (namespace, pod, UID) and whether the sandbox is ready;
// /proc/<pid>/cgroup gives a GPU process's container id. Grants of pods whose sandbox is not
// ready are not attributed: kubelets have been seen to list terminated pods, whose devices may
// already be reassigned — counting them would attribute one device-second twice. They go to
// NodeSnapshot::terminal_grants, which only the stale-grant guardrail reads.

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/snapshot.h"
#include "sources/cri/runtime.h"
#include "sources/gpu_source.h"
#include "sources/kubelet/pod_resources.h"
#include "sources/procfs/proc_source.h"

namespace gpuledger::agent {

// Lookups over a KubeView's CRI lists; pointers into that view.
struct KubeIndex {
  std::map<std::pair<std::string, std::string>, const cri::PodSandbox*> ready_pods;  // (ns, pod)
  std::unordered_map<std::string, const cri::PodSandbox*> sandbox_by_id;
  std::unordered_map<std::string, const cri::Container*> container_by_id;
};

struct KubeView {
  bool present = false;  // a kubelet was ever seen: consumers are containers, else host users
  std::vector<kubelet::ContainerGrant> grants;
  std::vector<kubelet::AllocatableDevice> allocatable;
  std::vector<cri::PodSandbox> sandboxes;
  std::vector<cri::Container> containers;

  // Rebuilds `index` after the lists change (they change every ~10 s; snapshots are built every
  // cycle). A view whose index was never built is indexed on the fly.
  void Reindex();
  KubeIndex index;
  bool indexed = false;
};

// Why a process could not be tied to a known container this cycle (counted, and the reason
// the agent refreshes its Kubernetes view early).
struct JoinStats {
  int unknown_containers = 0;  // in a container CRI does not (yet) know
  int vanished_processes = 0;  // exited between NVML and /proc
};

// Consumer name for a process in no container: "user:<name>" for a regular user (uid >= 1000)
// wherever it runs, "unit:<name>" for a system account's service (a daemon, slurmstepd),
// "pid:<n>" when nothing is known.
std::string HostConsumerName(const procfs::ProcessIdentity& identity);

// Builds the snapshot: resolves grants (dropping terminal pods), derives each GPU's sharing
// mode and replica count (from the allocatable replica ids, else the granted ones; MIG when
// NVML shows instances; DRA when DRA grants name it), and ties each GPU process to its
// consumer. `identities` holds what procfs said for each PID (absent: vanished).
NodeSnapshot BuildSnapshot(const std::string& node, const sources::GpuReading& reading,
                           const KubeView& kube,
                           const std::map<int, procfs::ProcessIdentity>& identities,
                           JoinStats* stats);

// The GPU or MIG UUID a DRA device resolves to: a CDI device name ending in "=GPU-..." or
// "=MIG-...", else the driver's "gpu-<index>" name against the node's GPU order; empty when
// it cannot be resolved.
std::string ResolveDraDevice(const kubelet::DraDevice& dra, const sources::GpuReading& reading);

}  // namespace gpuledger::agent
