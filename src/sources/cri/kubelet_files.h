#pragma once
// Container id -> pod and container without the container runtime's socket (issue 62): what
// the kubelet itself leaves on the node, read-only through the agent's FileReader.
//
// - /var/log/pods/<namespace>_<pod>_<pod uid>/: one directory per pod the kubelet runs or has
//   not yet removed (names and namespaces are DNS names, so '_' separates them exactly);
// - /var/log/containers/<pod>_<namespace>_<container>-<container id>.log: one link per
//   container, the only place a node names a container's id beside its pod and name;
// - the pods' cgroups (/sys/fs/cgroup, v2 or v1, systemd or cgroupfs driver): the kubelet
//   removes a pod's once the pod has stopped, so a pod with logs but no cgroup has ended. A
//   terminated pod's grant that the kubelet still lists is then kept apart, as CRI's NOTREADY
//   sandbox is (agent/node_view.h). Where no kubepods cgroup can be read at all, every pod with
//   logs counts as running, and Describe() says so.
//
// Pods are keyed by UID: PodSandbox::id is the pod's UID here, Container::pod_sandbox_id too.

#include <memory>
#include <string>

#include "io/file_reader.h"
#include "sources/cri/runtime.h"

namespace gpuledger::cri {

std::unique_ptr<RuntimeClient> MakeKubeletFilesRuntime(FileReader& files);

}  // namespace gpuledger::cri
