#include "k8s/metadata_snapshot.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace gpuledger::k8s {

Result<MetadataTables> ParseMetadataSnapshot(std::string_view json_text, std::string_view where) {
  nlohmann::json list;
  try {
    list = nlohmann::json::parse(json_text);
  } catch (const std::exception& e) {
    return InvalidArgument(fmt::format("{}: not JSON: {}", where, e.what()));
  }
  if (!list.is_object() || !list.contains("items") || !list["items"].is_array())
    return InvalidArgument(
        fmt::format("{}: expected a List with items (kubectl get ... -o json)", where));
  std::map<std::string, ObjectInfo> pods, namespaces, nodes, replicasets, jobs;
  std::size_t index = 0;
  for (const nlohmann::json& item : list["items"]) {
    const std::string kind = item.is_object() ? item.value("kind", "") : "";
    std::map<std::string, ObjectInfo>* table = kind == "Pod"          ? &pods
                                               : kind == "Namespace"  ? &namespaces
                                               : kind == "Node"       ? &nodes
                                               : kind == "ReplicaSet" ? &replicasets
                                               : kind == "Job"        ? &jobs
                                                                      : nullptr;
    if (table != nullptr) {
      auto info = ParseObjectInfo(item);
      if (!info)
        return InvalidArgument(
            fmt::format("{}: items[{}] ({}): {}", where, index, kind, info.error().message));
      (*table)[ObjectKey(info->namespace_name, info->name)] = std::move(*info);
    }
    ++index;
  }
  auto share = [](std::map<std::string, ObjectInfo>& t) {
    return std::make_shared<const std::map<std::string, ObjectInfo>>(std::move(t));
  };
  MetadataTables tables;
  tables.pods = share(pods);
  tables.namespaces = share(namespaces);
  tables.nodes = share(nodes);
  tables.replicasets = share(replicasets);
  tables.jobs = share(jobs);
  tables.resource_claims = std::make_shared<const std::map<std::string, ResourceClaimInfo>>();
  tables.resource_slices = std::make_shared<const std::map<std::string, ResourceSliceInfo>>();
  return tables;
}

}  // namespace gpuledger::k8s
