#pragma once
// The mutating half of the webhook (issue 31): the JSONPatch (RFC 6902) that injects the
// in-process kernel-time tracer into a pod's GPU containers, for pods that opted in. Pure apart
// from JSON: the parsed pod in, the patch text out. Not yet served (a /mutate route and the
// policy switch come next); docs/agent.md "--kernel-time-dir".
//
// What it adds, to each regular container that requests a GPU (every regular container when
// the pod has DRA resource claims) and does not set CUDA_INJECTION64_PATH itself (a profiler,
// or the user's own injection, is left alone):
//   env  CUDA_INJECTION64_PATH=<library_dir>/libgpuledger-kerneltime.so (the CUDA driver loads
//        it), GPULEDGER_POD_UID from the downward API (metadata.uid: unknown at admission),
//        GPULEDGER_KERNELTIME_DIR=/run/gpuledger-kerneltime
//   volumeMounts  the library read-only at <library_dir>; the publish directory at
//        /run/gpuledger-kerneltime with subPathExpr $(GPULEDGER_POD_UID), so each pod writes
//        only <publish_dir>/<its uid>/ on the node, where the agent reads it
//   volumes  hostPath <library_dir> (Directory) and <publish_dir> (DirectoryOrCreate)

#include <optional>
#include <set>
#include <string>

#include "guardrails/admission.h"

namespace gpuledger::webhook {

struct KernelTimeInjection {
  std::set<std::string> namespaces;                       // every pod of these opts in
  std::string label = "gpuledger.io/kernel-time";         // or a pod labelled <label>=enabled
  std::string library_dir = "/opt/gpuledger/lib";         // on the node, from the DaemonSet
  std::string publish_dir = "/run/gpuledger/kerneltime";  // on the node: the agent's dir
};

// The patch as JSON text, or nullopt when the pod did not opt in or has no container to inject.
std::optional<std::string> KernelTimePatch(const guardrails::AdmissionPod& pod,
                                           const KernelTimeInjection& injection);

}  // namespace gpuledger::webhook
