#include "sim/metadata_snapshot_writer.h"

#include <map>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/json_text.h"
#include "sim/sim_util.h"

namespace gpuledger::sim {
namespace {

using json = nlohmann::json;

json Metadata(const std::string& namespace_name, const std::string& name, const std::string& uid,
              const std::map<std::string, std::string>& labels) {
  json m = {{"name", name}, {"uid", uid}, {"labels", labels}};
  if (!namespace_name.empty()) m["namespace"] = namespace_name;
  return m;
}

json Owner(const std::string& kind, const std::string& name, const std::string& api_version) {
  return json::array({{{"apiVersion", api_version},
                       {"kind", kind},
                       {"name", name},
                       {"uid", fmt::format("{:016x}", HashOf(0, "owner", kind, name))},
                       {"controller", true}}});
}

}  // namespace

std::string MetadataSnapshotJson(const Scenario& scenario,
                                 const std::map<ConsumerRef, ConsumerInfo>& consumers) {
  json items = json::array();
  std::set<std::string> namespaces;
  for (const auto& [ref, info] : consumers)
    if (!ref.IsHost()) namespaces.insert(ref.namespace_name);
  for (const auto& [name, labels] : scenario.namespace_labels) namespaces.insert(name);
  for (const std::string& ns : namespaces) {
    auto it = scenario.namespace_labels.find(ns);
    items.push_back({{"apiVersion", "v1"},
                     {"kind", "Namespace"},
                     {"metadata", Metadata("", ns, fmt::format("ns-{:016x}", HashOf(0, "ns", ns)),
                                           it == scenario.namespace_labels.end()
                                               ? std::map<std::string, std::string>{}
                                               : it->second)}});
  }
  for (const NodeSpec& n : scenario.nodes) {
    auto labels = n.labels;
    if (!n.region.empty()) labels.try_emplace("topology.kubernetes.io/region", n.region);
    if (!n.pricing_class.empty()) labels.try_emplace("gpuledger.io/pricing-class", n.pricing_class);
    labels.try_emplace("kubernetes.io/hostname", n.name);
    items.push_back(
        {{"apiVersion", "v1"},
         {"kind", "Node"},
         {"metadata",
          Metadata("", n.name, fmt::format("node-{:016x}", HashOf(0, "node", n.name)), labels)}});
  }
  // The pods that serve tokens opt in as a real one does (server/engine_targets.h), so a replay
  // of the scenario's snapshots books their engines' files.
  std::map<std::pair<std::string, std::string>, json> engines;  // (namespace, pod) -> annotations
  for (const WorkloadSpec& w : scenario.workloads)
    if (w.inference)
      for (const PodPlan& pod : w.pods)
        engines[{w.namespace_name, pod.name}] = {{"gpuledger.io/tokens-port", "8000"},
                                                 {"gpuledger.io/model", w.inference->model},
                                                 {"gpuledger.io/tokens-container", w.container}};
  std::set<std::pair<std::string, std::string>> owners_written;  // (namespace, name)
  for (const auto& [ref, info] : consumers) {
    if (ref.IsHost()) continue;
    json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", Metadata(ref.namespace_name, ref.pod, ref.pod_uid.value, info.labels)}};
    if (auto engine = engines.find({ref.namespace_name, ref.pod}); engine != engines.end()) {
      const std::uint64_t h = HashOf(0, "pod-ip", ref.namespace_name, ref.pod);
      pod["metadata"]["annotations"] = engine->second;
      pod["status"] = {
          {"podIP", fmt::format("10.{}.{}.{}", (h >> 16) & 0xff, (h >> 8) & 0xff, 1 + (h & 0xfd))}};
    }
    const std::string hash =
        fmt::format("{:08x}", HashOf(0, "rs", ref.namespace_name, info.owner_name) & 0xffffffff);
    if (info.owner_kind == "Deployment") {
      const std::string rs = info.owner_name + "-" + hash;
      pod["metadata"]["labels"]["pod-template-hash"] = hash;
      pod["metadata"]["ownerReferences"] = Owner("ReplicaSet", rs, "apps/v1");
      if (owners_written.insert({ref.namespace_name, rs}).second) {
        items.push_back({{"apiVersion", "apps/v1"},
                         {"kind", "ReplicaSet"},
                         {"metadata", Metadata(ref.namespace_name, rs, "rs-" + hash, {})}});
        items.back()["metadata"]["ownerReferences"] =
            Owner("Deployment", info.owner_name, "apps/v1");
      }
    } else if (info.owner_kind == "CronJob") {
      const std::string job = info.owner_name + "-" + hash;
      pod["metadata"]["ownerReferences"] = Owner("Job", job, "batch/v1");
      if (owners_written.insert({ref.namespace_name, job}).second) {
        items.push_back({{"apiVersion", "batch/v1"},
                         {"kind", "Job"},
                         {"metadata", Metadata(ref.namespace_name, job, "job-" + hash, {})}});
        items.back()["metadata"]["ownerReferences"] = Owner("CronJob", info.owner_name, "batch/v1");
      }
    } else if (!info.owner_kind.empty() && info.owner_kind != "Pod") {
      pod["metadata"]["ownerReferences"] = Owner(info.owner_kind, info.owner_name, "apps/v1");
    }
    items.push_back(std::move(pod));
  }
  return JsonText(
      json{{"apiVersion", "v1"}, {"kind", "List"}, {"metadata", json::object()}, {"items", items}},
      1);
}

}  // namespace gpuledger::sim
