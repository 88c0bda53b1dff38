#pragma once
// The mutating half of the webhook (issue 31): the JSONPatch (RFC 6902) that injects the
// in-process kernel-time tracer into a pod's GPU containers, for pods that opted in. Pure apart
// from JSON: the parsed pod in, the patch text out; served at /mutate (webhook_server.h) when the
// policy's webhook.kernel_time.inject is on (docs/webhook.md).
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
#include <string>

#include "guardrails/admission.h"
#include "guardrails/policy.h"

namespace gpuledger::webhook {

// The patch as JSON text, or nullopt when injection is off, the pod did not opt in, or it has no
// container to inject.
std::optional<std::string> KernelTimePatch(const guardrails::AdmissionPod& pod,
                                           const guardrails::KernelTimeInjection& injection);

}  // namespace gpuledger::webhook
