#include "k8s/metadata_view.h"

#include <charconv>
#include <cstdlib>
#include <tuple>

namespace gpuledger::k8s {

MetadataView::MetadataView(MetadataTables tables) : tables_(std::move(tables)) {
  if (!tables_.resource_slices) {
    return;
  }
  // Only slices of a pool's highest generation are current (the ResourceSlice contract).
  std::map<std::pair<std::string, std::string>, std::int64_t> generation;
  for (const auto& [key, slice] : *tables_.resource_slices) {
    if (slice.deleted) {
      continue;
    }
    auto& g = generation[{slice.driver, slice.pool}];
    g = std::max(g, slice.pool_generation);
  }
  for (const auto& [key, slice] : *tables_.resource_slices) {
    if (slice.deleted || slice.pool_generation != generation[{slice.driver, slice.pool}]) {
      continue;
    }
    for (const auto& device : slice.devices) {
      devices_[{slice.driver, slice.pool, device.name}] = {&device, slice.node_name};
    }
  }
}

const ObjectInfo* MetadataView::Find(const Table<ObjectInfo>& table, const std::string& key) const {
  if (!table) {
    return nullptr;
  }
  auto it = table->find(key);
  return it == table->end() ? nullptr : &it->second;
}

namespace {

// "0.5" -> 0.5 in (0, 1]; "2000" (MiB) -> bytes. Malformed values declare nothing.
void ApplyGpuAnnotations(const std::map<std::string, std::string>& annotations,
                         ConsumerInfo& info) {
  if (auto it = annotations.find(std::string(kGpuFractionAnnotation)); it != annotations.end()) {
    char* end = nullptr;
    const double f = std::strtod(it->second.c_str(), &end);
    if (end != it->second.c_str() && *end == '\0' && f > 0 && f <= 1)
      info.annotated_gpu_fraction = f;
  }
  if (auto it = annotations.find(std::string(kGpuMemoryAnnotation)); it != annotations.end()) {
    std::int64_t mib = 0;
    auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), mib);
    if (ec == std::errc() && p == it->second.data() + it->second.size() && mib > 0 &&
        mib < (1ll << 40))
      info.annotated_gpu_memory_bytes = mib * kMiB;
  }
}

}  // namespace

ConsumerInfo MetadataView::Describe(const ConsumerRef& ref) const {
  ConsumerInfo info;
  info.ref = ref;
  if (ref.IsHost()) {
    return info;
  }
  info.namespace_labels = NamespaceLabels(ref.namespace_name);
  info.owner_kind = "Pod";
  info.owner_name = ref.pod;
  const ObjectInfo* pod = Find(tables_.pods, ObjectKey(ref.namespace_name, ref.pod));
  if (pod == nullptr) {
    return info;
  }
  info.labels = pod->labels;
  ApplyGpuAnnotations(pod->annotations, info);
  if (!pod->controller || pod->controller->kind.empty()) {
    return info;
  }
  const OwnerRef& owner = *pod->controller;
  info.owner_kind = owner.kind;
  info.owner_name = owner.name;
  if (owner.kind == "ReplicaSet") {
    const ObjectInfo* rs = Find(tables_.replicasets, ObjectKey(ref.namespace_name, owner.name));
    if (rs != nullptr) {
      if (rs->controller && !rs->controller->kind.empty()) {
        info.owner_kind = rs->controller->kind;  // Deployment (or e.g. an Argo Rollout)
        info.owner_name = rs->controller->name;
      }
      return info;
    }
    // Not cached (yet, or long gone): a Deployment names its ReplicaSets <deployment>-<hash>.
    auto hash = pod->labels.find("pod-template-hash");
    if (hash != pod->labels.end() && !hash->second.empty() &&
        owner.name.size() > hash->second.size() + 1 && owner.name.ends_with("-" + hash->second)) {
      info.owner_kind = "Deployment";
      info.owner_name = owner.name.substr(0, owner.name.size() - hash->second.size() - 1);
    }
  } else if (owner.kind == "Job") {
    const ObjectInfo* job = Find(tables_.jobs, ObjectKey(ref.namespace_name, owner.name));
    if (job != nullptr && job->controller && !job->controller->kind.empty()) {
      info.owner_kind = job->controller->kind;  // CronJob
      info.owner_name = job->controller->name;
    }
  }
  return info;
}

std::map<std::string, std::string> MetadataView::NodeLabels(const std::string& node) const {
  const ObjectInfo* n = Find(tables_.nodes, node);
  return n == nullptr ? std::map<std::string, std::string>{} : n->labels;
}

std::map<std::string, std::string> MetadataView::NamespaceLabels(
    const std::string& namespace_name) const {
  const ObjectInfo* ns = Find(tables_.namespaces, namespace_name);
  return ns == nullptr ? std::map<std::string, std::string>{} : ns->labels;
}

std::vector<DraDeviceInfo> MetadataView::ClaimDevices(const std::string& claim) const {
  std::vector<DraDeviceInfo> out;
  if (!tables_.resource_claims) {
    return out;
  }
  auto it = tables_.resource_claims->find(claim);
  if (it == tables_.resource_claims->end()) {
    return out;
  }
  for (const auto& a : it->second.allocated) {
    DraDeviceInfo d;
    d.allocation = a;
    auto dev = devices_.find({a.driver, a.pool, a.device});
    if (dev != devices_.end()) {
      d.attributes = dev->second.device->attributes;
      d.node = dev->second.node;
      auto uuid = d.attributes.find("uuid");
      if (uuid != d.attributes.end()) {
        d.uuid = GpuUuid(uuid->second);
      }
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::optional<std::map<std::string, std::string>> MetadataView::DeviceAttributes(
    const std::string& driver, const std::string& pool, const std::string& device) const {
  auto it = devices_.find({driver, pool, device});
  if (it == devices_.end()) {
    return std::nullopt;
  }
  return it->second.device->attributes;
}

GpuUuid MetadataView::DeviceUuid(const std::string& driver, const std::string& pool,
                                 const std::string& device) const {
  auto it = devices_.find({driver, pool, device});
  if (it == devices_.end()) {
    return {};
  }
  auto uuid = it->second.device->attributes.find("uuid");
  return uuid == it->second.device->attributes.end() ? GpuUuid{} : GpuUuid(uuid->second);
}

std::vector<ObjectInfo> MetadataView::LivePods() const {
  std::vector<ObjectInfo> out;
  if (!tables_.pods) {
    return out;
  }
  for (const auto& [key, pod] : *tables_.pods) {
    if (!pod.deleted) {
      out.push_back(pod);
    }
  }
  return out;
}

}  // namespace gpuledger::k8s
