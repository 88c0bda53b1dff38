#pragma once
// MetadataView: an immutable snapshot of the cluster objects the server joins to ledger rows
// (pods, namespaces, nodes, ReplicaSets, Jobs, DRA ResourceClaims and ResourceSlices). Pure:
// no I/O; built by MetadataSource from its watch caches, or by tests from tables. Every method
// is const and the tables are never modified after construction, so a view is safe to share
// between threads.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/ids.h"
#include "k8s/k8s_objects.h"
#include "model/consumer.h"

namespace gpuledger::k8s {

template <typename T>
using Table = std::shared_ptr<const std::map<std::string, T>>;  // keyed by ObjectKey

// The caches a view reads. A null table is empty. Tables are shared between successive views:
// a watcher replaces only its own kind's table.
struct MetadataTables {
  Table<ObjectInfo> pods;
  Table<ObjectInfo> namespaces;
  Table<ObjectInfo> nodes;
  Table<ObjectInfo> replicasets;
  Table<ObjectInfo> jobs;
  Table<ResourceClaimInfo> resource_claims;
  Table<ResourceSliceInfo> resource_slices;
};

// A device a DRA claim holds, with what its ResourceSlice says about it.
struct DraDeviceInfo {
  DraAllocation allocation;
  std::map<std::string, std::string> attributes;  // empty when no slice publishes the device
  GpuUuid uuid;                                   // attribute "uuid"; empty when unknown
  std::string node;                               // the slice's nodeName
};

class MetadataView {
 public:
  MetadataView() = default;  // knows nothing: Describe gives Pod/<name> and no labels
  explicit MetadataView(MetadataTables tables);

  // Owner resolution to the top controller: Pod -> ReplicaSet -> Deployment, Pod -> Job ->
  // CronJob; StatefulSet, DaemonSet and other controllers directly; a pod with no controller
  // is ("Pod", name). Looked up by namespace/name; deleted pods are kept for a while (see
  // MetadataConfig::tombstone_retention), so closed hours of finished Jobs still resolve. A
  // ReplicaSet not in the cache resolves through the pod-template-hash label ("web-7d4f9c" with
  // hash "7d4f9c" -> Deployment "web"). Host consumers come back with only `ref` set.
  ConsumerInfo Describe(const ConsumerRef& ref) const;

  std::map<std::string, std::string> NodeLabels(const std::string& node) const;
  std::map<std::string, std::string> NamespaceLabels(const std::string& namespace_name) const;

  // DRA. `claim` is "namespace/name", as PodResources names it. Empty when the claim is
  // unknown or not allocated.
  std::vector<DraDeviceInfo> ClaimDevices(const std::string& claim) const;
  // Attributes of a device as its ResourceSlice (highest pool generation) publishes it.
  std::optional<std::map<std::string, std::string>> DeviceAttributes(
      const std::string& driver, const std::string& pool, const std::string& device) const;
  // The device's "uuid" attribute ("GPU-...", "MIG-..."); empty when unknown.
  GpuUuid DeviceUuid(const std::string& driver, const std::string& pool,
                     const std::string& device) const;

  // The live objects (tombstones excluded), for tests and debugging endpoints.
  std::vector<ObjectInfo> LivePods() const;
  const MetadataTables& tables() const { return tables_; }

 private:
  struct DeviceKey {
    std::string driver, pool, device;
    auto operator<=>(const DeviceKey&) const = default;
  };
  struct DeviceEntry {
    const SliceDevice* device = nullptr;
    std::string node;
  };

  const ObjectInfo* Find(const Table<ObjectInfo>& table, const std::string& key) const;

  MetadataTables tables_;
  std::map<DeviceKey, DeviceEntry> devices_;  // from resource_slices, built once
};

}  // namespace gpuledger::k8s
