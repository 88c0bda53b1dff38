#pragma once
// Kubernetes API objects as gpuledger needs them, and pure parsers from the API server's JSON
// (lists, watch-event lines). Only the fields metadata joins use are kept, so a cache of a large
// cluster stays small. No I/O here: ApiMetadataSource does the reading.

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace gpuledger::k8s {

// Pod annotations that declare a GPU share the agent cannot see (it has no API credentials):
// KAI Scheduler / Run:ai's "gpu-fraction" (a fraction of one GPU, "0.5") and "gpu-memory"
// (MiB of one GPU), as KAI's GPU-sharing documentation names them.
inline constexpr std::string_view kGpuFractionAnnotation = "gpu-fraction";
inline constexpr std::string_view kGpuMemoryAnnotation = "gpu-memory";
// An inference engine whose token counters the server scrapes (issue 63, docs/tokens.md): its
// metrics port (the opt-in), path, model (for engines that name none) and container.
inline constexpr std::string_view kTokensPortAnnotation = "gpuledger.io/tokens-port";
inline constexpr std::string_view kTokensPathAnnotation = "gpuledger.io/tokens-path";
inline constexpr std::string_view kModelAnnotation = "gpuledger.io/model";
inline constexpr std::string_view kTokensContainerAnnotation = "gpuledger.io/tokens-container";

// The controlling owner reference (controller: true; else the first one listed).
struct OwnerRef {
  std::string kind;  // "ReplicaSet", "Job", "StatefulSet", "DaemonSet", "Deployment", ...
  std::string name;
  std::string uid;
  auto operator<=>(const OwnerRef&) const = default;
};

// A pod, namespace, node, ReplicaSet or Job: what owner resolution and label joins need.
struct ObjectInfo {
  std::string namespace_name;  // empty for cluster-scoped kinds (namespaces, nodes)
  std::string name;
  std::string uid;
  std::map<std::string, std::string> labels;
  std::optional<OwnerRef> controller;
  std::string node_name;  // pods: spec.nodeName
  // Pods: only the annotations gpuledger reads (the GPU-sharing and token ones above), so the
  // cache stays small.
  std::map<std::string, std::string> annotations;
  std::string pod_ip;  // pods: status.podIP ("" until the pod has one)
  // Kept for a while after deletion (a tombstone) so closed ledger hours of short-lived pods
  // still resolve owners and labels.
  bool deleted = false;
  auto operator<=>(const ObjectInfo&) const = default;
};

// One device a DRA ResourceClaim was allocated (status.allocation.devices.results[]).
struct DraAllocation {
  std::string request;
  std::string driver;  // "gpu.nvidia.com"
  std::string pool;    // usually the node name
  std::string device;  // "gpu-0", "gpu-0-mig-1-0-3"
  std::string share_id;
  auto operator<=>(const DraAllocation&) const = default;
};

struct ResourceClaimInfo {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::vector<DraAllocation> allocated;  // empty while unallocated
  bool deleted = false;
  auto operator<=>(const ResourceClaimInfo&) const = default;
};

struct SliceDevice {
  std::string name;
  // Attribute values as text (int, bool, string, version). Names are unqualified: a name
  // qualified with the slice's own driver ("gpu.nvidia.com/uuid") is stored as "uuid"; names of
  // other domains keep their prefix.
  std::map<std::string, std::string> attributes;
  auto operator<=>(const SliceDevice&) const = default;
};

struct ResourceSliceInfo {
  std::string name;
  std::string driver;
  std::string pool;
  std::int64_t pool_generation = 0;  // only slices of a pool's highest generation count
  std::string node_name;
  std::vector<SliceDevice> devices;
  bool deleted = false;
  auto operator<=>(const ResourceSliceInfo&) const = default;
};

// Parsers over one object of the list's `items` or a watch event's `object`. kInvalidArgument
// names the missing or mistyped field. ResourceSlice reads devices[].attributes (v1, v1beta2)
// and devices[].basic.attributes (v1beta1).
Result<ObjectInfo> ParseObjectInfo(const nlohmann::json& object);
Result<ResourceClaimInfo> ParseResourceClaim(const nlohmann::json& object);
Result<ResourceSliceInfo> ParseResourceSlice(const nlohmann::json& object);

// "namespace/name", or "name" for a cluster-scoped object: the cache key.
std::string ObjectKey(std::string_view namespace_name, std::string_view name);

// A list response: {"kind":"PodList","metadata":{"resourceVersion":"123","continue":"..."},
// "items":[...]}. Items stay raw JSON; the caller parses each with its kind's parser.
struct ListPage {
  std::string resource_version;
  std::string continue_token;
  std::vector<nlohmann::json> items;
};
Result<ListPage> ParseListPage(std::string_view body);

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

// One line of a watch stream: {"type":"ADDED","object":{...}}. For kError the object is a
// Status; `status_code` is its `code` (410 when the resourceVersion is too old).
struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  std::string resource_version;            // object.metadata.resourceVersion
  int status_code = 0;                     // kError only
  std::string message;                     // kError only
  std::shared_ptr<nlohmann::json> object;  // never null on success
};
Result<WatchEvent> ParseWatchEvent(std::string_view line);

// Splits a byte stream into newline-terminated lines across arbitrary chunk boundaries. What is
// left without a newline when the stream ends is a truncated event (`pending()` not empty).
class LineSplitter {
 public:
  // Appends `data` and returns the complete lines it finished (without '\n', empty lines
  // dropped).
  std::vector<std::string> Feed(std::string_view data);
  const std::string& pending() const { return pending_; }
  void Reset() { pending_.clear(); }

 private:
  std::string pending_;
};

}  // namespace gpuledger::k8s
