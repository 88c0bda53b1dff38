#include "webhook/kernel_time_patch.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/json_text.h"

namespace gpuledger::webhook {
namespace {

using json = nlohmann::json;

constexpr const char* kLibraryVolume = "gpuledger-kerneltime-lib";
constexpr const char* kPublishVolume = "gpuledger-kerneltime";
constexpr const char* kMountedPublishDir = "/run/gpuledger-kerneltime";

bool WantsGpu(const guardrails::AdmissionPod& pod, const guardrails::AdmissionContainer& c) {
  if (pod.resource_claims > 0) return true;
  return std::any_of(c.resources.begin(), c.resources.end(),
                     [](const auto& r) { return guardrails::IsGpuResource(r.first); });
}

bool SetsInjection(const guardrails::AdmissionContainer& c) {
  return std::any_of(c.env.begin(), c.env.end(),
                     [](const auto& e) { return e.name == "CUDA_INJECTION64_PATH"; });
}

// Appends `items` to the list at `path`: one "add" of the whole list when it does not exist,
// else one "add" per item at "/-".
void AddToList(json& patch, const std::string& path, bool exists, const json& items) {
  if (!exists) {
    patch.push_back({{"op", "add"}, {"path", path}, {"value", items}});
    return;
  }
  for (const json& item : items)
    patch.push_back({{"op", "add"}, {"path", path + "/-"}, {"value", item}});
}

}  // namespace

std::optional<std::string> KernelTimePatch(const guardrails::AdmissionPod& pod,
                                           const guardrails::KernelTimeInjection& injection) {
  if (!injection.inject) return std::nullopt;
  const auto label = pod.labels.find(injection.label);
  const bool opted_in = injection.namespaces.count(pod.namespace_name) > 0 ||
                        (label != pod.labels.end() && label->second == "enabled");
  if (!opted_in) return std::nullopt;
  const std::string library = injection.library_dir + "/libgpuledger-kerneltime.so";
  const json env =
      json::array({{{"name", "CUDA_INJECTION64_PATH"}, {"value", library}},
                   {{"name", "GPULEDGER_POD_UID"},
                    {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.uid"}}}}}},
                   {{"name", "GPULEDGER_KERNELTIME_DIR"}, {"value", kMountedPublishDir}}});
  const json mounts = json::array(
      {{{"name", kLibraryVolume}, {"mountPath", injection.library_dir}, {"readOnly", true}},
       {{"name", kPublishVolume},
        {"mountPath", kMountedPublishDir},
        {"subPathExpr", "$(GPULEDGER_POD_UID)"}}});
  json patch = json::array();
  int index = -1;  // the container's index in spec.containers
  for (const guardrails::AdmissionContainer& c : pod.containers) {
    if (c.role != guardrails::ContainerRole::kContainer) continue;
    ++index;
    if (!WantsGpu(pod, c) || SetsInjection(c)) continue;
    const std::string at = fmt::format("/spec/containers/{}", index);
    AddToList(patch, at + "/env", c.has_env_list, env);
    AddToList(patch, at + "/volumeMounts", c.has_volume_mounts, mounts);
  }
  if (patch.empty()) return std::nullopt;
  const json volumes = json::array(
      {{{"name", kLibraryVolume},
        {"hostPath", {{"path", injection.library_dir}, {"type", "Directory"}}}},
       {{"name", kPublishVolume},
        {"hostPath", {{"path", injection.publish_dir}, {"type", "DirectoryOrCreate"}}}}});
  AddToList(patch, "/spec/volumes", pod.has_volumes, volumes);
  return JsonText(patch);
}

}  // namespace gpuledger::webhook
