#pragma once
// Admission decisions (docs/webhook.md): what the validating webhook decides about a pod, as a
// pure function of the pod's spec and the policy. The webhook edge (src/webhook) reads the
// AdmissionReview into an AdmissionPod and writes the verdict back; nothing here does I/O.
//
// The two admission kinds:
//   pod-sets-visible-devices        a container sets NVIDIA_VISIBLE_DEVICES or
//                                   NVIDIA_DRIVER_CAPABILITIES itself (literally or from a
//                                   reference): the NVIDIA runtime then exposes what it names,
//                                   whatever the pod was granted.
//   privileged-without-gpu-request  a privileged container in a pod that requests no GPU: under
//                                   the NVIDIA runtime it sees every device of the node.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "guardrails/policy.h"
#include "model/finding.h"

namespace gpuledger::guardrails {

enum class ContainerRole { kContainer, kInit, kEphemeral };

struct AdmissionEnvVar {
  std::string name;
  std::optional<std::string> value;  // nullopt: set from a reference (valueFrom)
};

// What the webhook needs of one container of the pod.
struct AdmissionContainer {
  std::string name;
  ContainerRole role = ContainerRole::kContainer;
  std::vector<AdmissionEnvVar> env;  // `env` entries in order (envFrom cannot be seen here)
  bool privileged = false;           // securityContext.privileged
  // Every resource of requests and limits as (name, quantity as written), GPU or not: which
  // names are GPUs is decided here (IsGpuResource), not by the reader.
  std::vector<std::pair<std::string, std::string>> resources;
  // Whether the object has an `env` / `volumeMounts` list at all (a JSONPatch adds to a list
  // that exists and creates one that does not).
  bool has_env_list = false;
  bool has_volume_mounts = false;
};

struct AdmissionPod {
  std::string namespace_name;
  std::string name;  // may be empty: a pod created from generateName has none yet
  std::map<std::string, std::string> labels;
  std::vector<AdmissionContainer> containers;
  int resource_claims = 0;  // spec.resourceClaims (DRA): each counts as a GPU request
  bool has_volumes = false;  // spec.volumes exists
};

struct AdmissionVerdict {
  bool allowed = true;
  // One full sentence per finding whose kind is at warn, naming the container and what it set.
  std::vector<std::string> warnings;
  std::string denial;  // why, when !allowed: the sentences of the deny findings
  // The kinds whose condition held and that the policy neither turns off nor exempts, each once,
  // in FindingKind order, at any action (report counts them without telling the user).
  std::vector<FindingKind> fired;
};

// GPU resources as the device plugins and sharing layers register them: nvidia.com/gpu (and
// time-slicing's renamed nvidia.com/gpu.shared), nvidia.com/mig-<profile>, HAMi's
// nvidia.com/gpucores, nvidia.com/gpumem and nvidia.com/gpumem-percentage, Alibaba's
// aliyun.com/gpu-mem and alibabacloud.com/gpu-mem, and gpu_milli.
bool IsGpuResource(std::string_view resource_name);

// Whether the pod asks for a GPU: a GPU resource with a quantity other than zero in any
// container's requests or limits, or any resource claim.
bool RequestsGpu(const AdmissionPod& pod);

// The decision for `pod` under `policy`. Never fails: a pod that could not be read is the
// edge's concern (Policy::webhook_fail_open).
AdmissionVerdict Judge(const AdmissionPod& pod, const Policy& policy);

}  // namespace gpuledger::guardrails
