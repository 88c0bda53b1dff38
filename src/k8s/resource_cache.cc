#include "k8s/resource_cache.h"

#include <map>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace gpuledger::k8s {
namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

template <typename T>
class TypedCache : public ResourceCache {
 public:
  using ParseFn = Result<T> (*)(const json&);
  TypedCache(ParseFn parse, Table<T> MetadataTables::*member, std::chrono::seconds retention)
      : parse_(parse), member_(member), retention_(retention) {}

  Status Apply(WatchEventType type, const json& object) override {
    auto value = parse_(object);
    if (!value) {
      return value.error();
    }
    std::string key = KeyOf(*value);
    if (type == WatchEventType::kDeleted) {
      value->deleted = true;
      deleted_at_[key] = SteadyClock::now();
    } else {
      deleted_at_.erase(key);
    }
    map_[std::move(key)] = std::move(*value);
    return Status::Ok();
  }

  int Replace(const std::vector<json>& items, std::string* first_error) override {
    int failed = 0;
    std::map<std::string, T> next;
    for (const auto& item : items) {
      auto value = parse_(item);
      if (!value) {
        if (failed++ == 0) {
          *first_error = value.error().message;
        }
        continue;
      }
      std::string key = KeyOf(*value);
      next[std::move(key)] = std::move(*value);
    }
    const auto now = SteadyClock::now();
    for (auto& [key, old] : map_) {
      if (next.contains(key)) {
        deleted_at_.erase(key);
        continue;
      }
      if (!old.deleted) {
        old.deleted = true;
        deleted_at_[key] = now;
      }
      next.emplace(key, std::move(old));
    }
    map_ = std::move(next);
    return failed;
  }

  void Clear() override {
    map_.clear();
    deleted_at_.clear();
  }

  void Publish(MetadataTables& tables) override {
    const auto cutoff = SteadyClock::now() - retention_;
    for (auto it = deleted_at_.begin(); it != deleted_at_.end();) {
      if (it->second <= cutoff) {
        map_.erase(it->first);
        it = deleted_at_.erase(it);
      } else {
        ++it;
      }
    }
    tables.*member_ = std::make_shared<const std::map<std::string, T>>(map_);
  }

 private:
  static std::string KeyOf(const T& value) {
    if constexpr (requires { value.namespace_name; }) {
      return ObjectKey(value.namespace_name, value.name);
    } else {
      return value.name;
    }
  }

  ParseFn parse_;
  Table<T> MetadataTables::*member_;
  std::chrono::seconds retention_;
  std::map<std::string, T> map_;
  std::map<std::string, SteadyClock::time_point> deleted_at_;
};

}  // namespace

std::vector<WatchedResource> WatchedResources(bool dra) {
  auto objects = [](Table<ObjectInfo> MetadataTables::*member) {
    return [member](std::chrono::seconds retention) -> std::unique_ptr<ResourceCache> {
      return std::make_unique<TypedCache<ObjectInfo>>(&ParseObjectInfo, member, retention);
    };
  };
  std::vector<WatchedResource> specs = {
      {"pods", {"/api/v1/pods"}, false, objects(&MetadataTables::pods)},
      {"namespaces", {"/api/v1/namespaces"}, false, objects(&MetadataTables::namespaces)},
      {"nodes", {"/api/v1/nodes"}, false, objects(&MetadataTables::nodes)},
      {"replicasets", {"/apis/apps/v1/replicasets"}, false, objects(&MetadataTables::replicasets)},
      {"jobs", {"/apis/batch/v1/jobs"}, false, objects(&MetadataTables::jobs)},
  };
  if (dra) {
    // resource.k8s.io: v1 is GA since Kubernetes 1.34; v1beta2 (1.33) and v1beta1 (1.32) serve
    // the same claim status; v1beta1 slices nest attributes under `basic` (the parser reads both).
    auto versions = [](const std::string& plural) {
      std::vector<std::string> paths;
      for (const char* v : {"v1", "v1beta2", "v1beta1"}) {
        paths.push_back(fmt::format("/apis/resource.k8s.io/{}/{}", v, plural));
      }
      return paths;
    };
    specs.push_back({"resourceclaims", versions("resourceclaims"), true,
                     [](std::chrono::seconds r) -> std::unique_ptr<ResourceCache> {
                       return std::make_unique<TypedCache<ResourceClaimInfo>>(
                           &ParseResourceClaim, &MetadataTables::resource_claims, r);
                     }});
    specs.push_back({"resourceslices", versions("resourceslices"), true,
                     [](std::chrono::seconds r) -> std::unique_ptr<ResourceCache> {
                       return std::make_unique<TypedCache<ResourceSliceInfo>>(
                           &ParseResourceSlice, &MetadataTables::resource_slices, r);
                     }});
  }
  return specs;
}

}  // namespace gpuledger::k8s
