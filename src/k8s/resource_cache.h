#pragma once
// The resource kinds the metadata source watches, each with its cache: what the watcher thread
// applies list and watch events to, and publishes into the shared MetadataTables.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/result.h"
#include "k8s/k8s_objects.h"
#include "k8s/metadata_view.h"

namespace gpuledger::k8s {

// One resource kind's cache, owned by its watcher thread. Publish copies it into the shared
// tables (the only point where another thread can see it).
class ResourceCache {
 public:
  virtual ~ResourceCache() = default;
  // ADDED/MODIFIED upsert, DELETED turns the entry into a tombstone.
  virtual Status Apply(WatchEventType type, const nlohmann::json& object) = 0;
  // A complete list: replaces the live entries; entries it lacks become tombstones. Returns
  // the number of items that failed to parse (skipped).
  virtual int Replace(const std::vector<nlohmann::json>& items, std::string* first_error) = 0;
  virtual void Clear() = 0;
  virtual void Publish(MetadataTables& tables) = 0;
};

// One resource kind to list and watch.
struct WatchedResource {
  std::string name;
  std::vector<std::string> paths;  // candidates, newest API version first
  bool optional = false;           // 404 on every candidate: absent, not an error
  std::function<std::unique_ptr<ResourceCache>(std::chrono::seconds)> make_cache;
};

// Pods, namespaces, nodes, ReplicaSets and Jobs; with `dra`, ResourceClaims and ResourceSlices
// too (optional: a cluster without resource.k8s.io serves neither).
std::vector<WatchedResource> WatchedResources(bool dra);

}  // namespace gpuledger::k8s
