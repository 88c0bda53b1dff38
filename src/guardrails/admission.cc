#include "guardrails/admission.h"
#include "common/enum_names.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace gpuledger::guardrails {
namespace {

constexpr std::array<std::string_view, 2> kRuntimeControlledEnv = {"NVIDIA_VISIBLE_DEVICES",
                                                                   "NVIDIA_DRIVER_CAPABILITIES"};

constexpr NameTable<ContainerRole, 3> kRoleWords = {
    {{ContainerRole::kContainer, "Container"},
     {ContainerRole::kInit, "Init container"},
     {ContainerRole::kEphemeral, "Ephemeral container"}}};

std::string_view RoleWord(ContainerRole role) { return NameIn(kRoleWords, role, "Container"); }

// A value as it may appear in a warning: the API server rejects warnings with control
// characters, and a sentence stays readable with a short value.
std::string Printable(std::string_view text) {
  constexpr std::size_t kMax = 64;
  std::string out;
  for (char c : text.substr(0, kMax)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (text.size() > kMax) out += "...";
  return out;
}

// A Kubernetes quantity ("0", "0.0", "0m", "0Gi", "+0e3") whose number is zero. Quantities
// reach a webhook already validated by the API server.
bool IsZeroQuantity(std::string_view quantity) {
  std::size_t at = 0;
  if (at < quantity.size() && (quantity[at] == '+' || quantity[at] == '-')) ++at;
  bool digits = false;
  for (; at < quantity.size() &&
         (std::isdigit(static_cast<unsigned char>(quantity[at])) || quantity[at] == '.');
       ++at) {
    if (quantity[at] == '.') continue;
    if (quantity[at] != '0') return false;
    digits = true;
  }
  return digits;
}

std::string VisibleDevicesSentence(const AdmissionContainer& c, const AdmissionEnvVar& var) {
  const std::string what = var.value ? var.name + "=" + Printable(*var.value)
                                     : var.name + " from a reference (valueFrom)";
  return std::string(RoleWord(c.role)) + " '" + Printable(c.name) + "' sets " + what +
         "; the NVIDIA runtime honours it over the pod's GPU grant (gpuledger: " +
         std::string(ToString(FindingKind::kPodSetsVisibleDevices)) + ").";
}

std::string PrivilegedSentence(const AdmissionContainer& c) {
  return std::string(RoleWord(c.role)) + " '" + Printable(c.name) +
         "' is privileged in a pod that requests no GPU, so it sees every GPU of the node "
         "(gpuledger: " +
         std::string(ToString(FindingKind::kPrivilegedWithoutRequest)) + ").";
}

}  // namespace

bool IsGpuResource(std::string_view name) {
  static constexpr std::array<std::string_view, 8> kExact = {"nvidia.com/gpu",
                                                             "nvidia.com/gpu.shared",
                                                             "nvidia.com/gpucores",
                                                             "nvidia.com/gpumem",
                                                             "nvidia.com/gpumem-percentage",
                                                             "aliyun.com/gpu-mem",
                                                             "alibabacloud.com/gpu-mem",
                                                             "gpu_milli"};
  if (std::find(kExact.begin(), kExact.end(), name) != kExact.end()) return true;
  return name.starts_with("nvidia.com/mig-");
}

bool RequestsGpu(const AdmissionPod& pod) {
  if (pod.resource_claims > 0) return true;
  return std::any_of(pod.containers.begin(), pod.containers.end(), [](const auto& c) {
    return std::any_of(c.resources.begin(), c.resources.end(), [](const auto& r) {
      return IsGpuResource(r.first) && !IsZeroQuantity(r.second);
    });
  });
}

AdmissionVerdict Judge(const AdmissionPod& pod, const Policy& policy) {
  AdmissionVerdict verdict;
  // Exemptions match the pod (namespace, labels), not a container.
  const ConsumerRef subject{pod.namespace_name, pod.name, PodUid{}, ""};
  auto apply = [&](FindingKind kind, const std::vector<std::string>& sentences) {
    const KindPolicy& kp = policy.For(kind);
    if (sentences.empty() || kp.action == Action::kOff) return;
    if (policy.Exempt(kind, subject, pod.labels)) return;
    verdict.fired.push_back(kind);
    if (kp.action == Action::kWarn) {
      verdict.warnings.insert(verdict.warnings.end(), sentences.begin(), sentences.end());
    } else if (kp.action == Action::kDeny) {
      verdict.allowed = false;
      for (const std::string& s : sentences)
        verdict.denial += (verdict.denial.empty() ? "" : " ") + s;
    }
  };

  std::vector<std::string> visible_devices;
  for (const AdmissionContainer& c : pod.containers) {
    for (const AdmissionEnvVar& var : c.env) {
      if (std::find(kRuntimeControlledEnv.begin(), kRuntimeControlledEnv.end(), var.name) !=
          kRuntimeControlledEnv.end())
        visible_devices.push_back(VisibleDevicesSentence(c, var));
    }
  }
  apply(FindingKind::kPodSetsVisibleDevices, visible_devices);

  std::vector<std::string> privileged;
  if (!RequestsGpu(pod)) {
    for (const AdmissionContainer& c : pod.containers)
      if (c.privileged) privileged.push_back(PrivilegedSentence(c));
  }
  apply(FindingKind::kPrivilegedWithoutRequest, privileged);
  return verdict;
}

}  // namespace gpuledger::guardrails
