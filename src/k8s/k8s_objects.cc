#include "k8s/k8s_objects.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/json_text.h"

namespace gpuledger::k8s {
namespace {

using nlohmann::json;

// The string at `key` of `object`, "" when absent or null; an error when another type.
Result<std::string> OptString(const json& object, const char* key, std::string_view where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    return std::string();
  }
  if (!it->is_string()) {
    return InvalidArgument(fmt::format("{}.{}: expected a string", where, key));
  }
  return it->get<std::string>();
}

Result<std::map<std::string, std::string>> StringMap(const json& object, const char* key,
                                                     std::string_view where) {
  std::map<std::string, std::string> out;
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    return out;
  }
  if (!it->is_object()) {
    return InvalidArgument(fmt::format("{}.{}: expected an object", where, key));
  }
  for (const auto& [k, v] : it->items()) {
    if (!v.is_string()) {
      return InvalidArgument(fmt::format("{}.{}[{}]: expected a string", where, key, k));
    }
    out.emplace(k, v.get<std::string>());
  }
  return out;
}

const json& Member(const json& object, const char* key) {
  static const json kNull;  // NOLINT: an immutable sentinel, not state
  if (!object.is_object()) {
    return kNull;
  }
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

struct Meta {
  std::string namespace_name, name, uid;
  std::map<std::string, std::string> labels;
  std::optional<OwnerRef> controller;
};

Result<Meta> ParseMeta(const json& object) {
  if (!object.is_object()) {
    return InvalidArgument("object: expected a JSON object");
  }
  const json& md = Member(object, "metadata");
  if (!md.is_object()) {
    return InvalidArgument("metadata: missing");
  }
  Meta meta;
  auto name = OptString(md, "name", "metadata");
  if (!name) {
    return name.error();
  }
  if (name->empty()) {
    return InvalidArgument("metadata.name: missing");
  }
  meta.name = std::move(*name);
  auto ns = OptString(md, "namespace", "metadata");
  if (!ns) {
    return ns.error();
  }
  meta.namespace_name = std::move(*ns);
  auto uid = OptString(md, "uid", "metadata");
  if (!uid) {
    return uid.error();
  }
  meta.uid = std::move(*uid);
  auto labels = StringMap(md, "labels", "metadata");
  if (!labels) {
    return labels.error();
  }
  meta.labels = std::move(*labels);
  const json& owners = Member(md, "ownerReferences");
  if (owners.is_array()) {
    for (const auto& o : owners) {
      if (!o.is_object()) {
        continue;
      }
      OwnerRef ref{o.value("kind", ""), o.value("name", ""), o.value("uid", "")};
      bool is_controller = o.value("controller", false);
      if (is_controller || !meta.controller) {
        meta.controller = ref;
      }
      if (is_controller) {
        break;
      }
    }
  }
  return meta;
}

std::string AttributeText(const json& value) {
  // DeviceAttribute: exactly one of int, bool, string, version.
  for (const char* k : {"string", "version"}) {
    auto it = value.find(k);
    if (it != value.end() && it->is_string()) {
      return it->get<std::string>();
    }
  }
  auto it = value.find("int");
  if (it != value.end() && it->is_number_integer()) {
    return std::to_string(it->get<long long>());
  }
  it = value.find("bool");
  if (it != value.end() && it->is_boolean()) {
    return it->get<bool>() ? "true" : "false";
  }
  return JsonText(value);
}

}  // namespace

std::string ObjectKey(std::string_view namespace_name, std::string_view name) {
  if (namespace_name.empty()) {
    return std::string(name);
  }
  std::string key;
  key.reserve(namespace_name.size() + 1 + name.size());
  key.append(namespace_name).append("/").append(name);
  return key;
}

static Result<ObjectInfo> ParseObjectInfoImpl(const json& object) {
  auto meta = ParseMeta(object);
  if (!meta) {
    return meta.error();
  }
  ObjectInfo info;
  info.namespace_name = std::move(meta->namespace_name);
  info.name = std::move(meta->name);
  info.uid = std::move(meta->uid);
  info.labels = std::move(meta->labels);
  info.controller = std::move(meta->controller);
  const json& annotations = Member(Member(object, "metadata"), "annotations");
  if (annotations.is_object())
    for (std::string_view key :
         {kGpuFractionAnnotation, kGpuMemoryAnnotation, kTokensPortAnnotation,
          kTokensPathAnnotation, kModelAnnotation, kTokensContainerAnnotation})
      if (auto it = annotations.find(std::string(key)); it != annotations.end() && it->is_string())
        info.annotations[std::string(key)] = it->get<std::string>();
  const json& spec = Member(object, "spec");
  if (spec.is_object()) {
    auto node = OptString(spec, "nodeName", "spec");
    if (!node) {
      return node.error();
    }
    info.node_name = std::move(*node);
  }
  const json& status = Member(object, "status");
  if (status.is_object()) {
    auto ip = OptString(status, "podIP", "status");
    if (!ip) return ip.error();
    info.pod_ip = std::move(*ip);
  }
  return info;
}

static Result<ResourceClaimInfo> ParseResourceClaimImpl(const json& object) {
  auto meta = ParseMeta(object);
  if (!meta) {
    return meta.error();
  }
  ResourceClaimInfo claim;
  claim.namespace_name = std::move(meta->namespace_name);
  claim.name = std::move(meta->name);
  claim.uid = std::move(meta->uid);
  const json& results =
      Member(Member(Member(Member(object, "status"), "allocation"), "devices"), "results");
  if (!results.is_null() && !results.is_array()) {
    return InvalidArgument("status.allocation.devices.results: expected an array");
  }
  if (results.is_array()) {
    for (const auto& r : results) {
      if (!r.is_object()) {
        return InvalidArgument("status.allocation.devices.results[]: expected an object");
      }
      DraAllocation a;
      a.request = r.value("request", "");
      a.driver = r.value("driver", "");
      a.pool = r.value("pool", "");
      a.device = r.value("device", "");
      a.share_id = r.value("shareID", "");
      if (a.driver.empty() || a.pool.empty() || a.device.empty()) {
        return InvalidArgument(
            "status.allocation.devices.results[]: driver, pool and device are required");
      }
      claim.allocated.push_back(std::move(a));
    }
  }
  return claim;
}

static Result<ResourceSliceInfo> ParseResourceSliceImpl(const json& object) {
  auto meta = ParseMeta(object);
  if (!meta) {
    return meta.error();
  }
  ResourceSliceInfo slice;
  slice.name = std::move(meta->name);
  const json& spec = Member(object, "spec");
  if (!spec.is_object()) {
    return InvalidArgument("spec: missing");
  }
  auto driver = OptString(spec, "driver", "spec");
  if (!driver) {
    return driver.error();
  }
  if (driver->empty()) {
    return InvalidArgument("spec.driver: missing");
  }
  slice.driver = std::move(*driver);
  auto node = OptString(spec, "nodeName", "spec");
  if (!node) {
    return node.error();
  }
  slice.node_name = std::move(*node);
  const json& pool = Member(spec, "pool");
  if (!pool.is_object()) {
    return InvalidArgument("spec.pool: missing");
  }
  slice.pool = pool.value("name", "");
  if (slice.pool.empty()) {
    return InvalidArgument("spec.pool.name: missing");
  }
  const json& generation = Member(pool, "generation");
  if (generation.is_number_integer()) {
    slice.pool_generation = generation.get<std::int64_t>();
  }
  const json& devices = Member(spec, "devices");
  if (devices.is_array()) {
    const std::string own_prefix = slice.driver + "/";
    for (const auto& d : devices) {
      SliceDevice device;
      device.name = d.is_object() ? d.value("name", "") : "";
      if (device.name.empty()) {
        return InvalidArgument("spec.devices[].name: missing");
      }
      const json* attrs = &Member(d, "attributes");  // v1, v1beta2
      if (attrs->is_null()) {
        attrs = &Member(Member(d, "basic"), "attributes");
      }  // v1beta1
      if (attrs->is_object()) {
        for (const auto& [k, v] : attrs->items()) {
          std::string name = k.starts_with(own_prefix) ? k.substr(own_prefix.size()) : k;
          device.attributes[std::move(name)] = AttributeText(v);
        }
      }
      slice.devices.push_back(std::move(device));
    }
  }
  return slice;
}

static Result<ListPage> ParseListPageImpl(std::string_view body) {
  json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return InvalidArgument("list: not valid JSON");
  }
  if (!doc.is_object()) {
    return InvalidArgument("list: expected a JSON object");
  }
  ListPage page;
  const json& md = Member(doc, "metadata");
  auto rv = OptString(md.is_object() ? md : json::object(), "resourceVersion", "metadata");
  if (!rv) {
    return rv.error();
  }
  page.resource_version = std::move(*rv);
  if (md.is_object()) {
    page.continue_token = md.value("continue", "");
  }
  json& items = doc["items"];
  if (!items.is_null() && !items.is_array()) {
    return InvalidArgument("list: items: expected an array");
  }
  if (items.is_array()) {
    page.items.reserve(items.size());
    for (auto& item : items) {
      page.items.push_back(std::move(item));
    }
  }
  return page;
}

static Result<WatchEvent> ParseWatchEventImpl(std::string_view line) {
  json doc = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidArgument("watch event: not a JSON object");
  }
  WatchEvent event;
  const std::string type = doc.value("type", "");
  if (type == "ADDED") {
    event.type = WatchEventType::kAdded;
  } else if (type == "MODIFIED") {
    event.type = WatchEventType::kModified;
  } else if (type == "DELETED") {
    event.type = WatchEventType::kDeleted;
  } else if (type == "BOOKMARK") {
    event.type = WatchEventType::kBookmark;
  } else if (type == "ERROR") {
    event.type = WatchEventType::kError;
  } else {
    return InvalidArgument(fmt::format("watch event: unknown type \"{}\"", type));
  }
  auto it = doc.find("object");
  if (it == doc.end() || !it->is_object()) {
    return InvalidArgument("watch event: object: missing");
  }
  event.object = std::make_shared<json>(std::move(*it));
  if (event.type == WatchEventType::kError) {
    const json& code = Member(*event.object, "code");
    event.status_code = code.is_number_integer() ? code.get<int>() : 0;
    event.message = event.object->value("message", "");
    return event;
  }
  const json& md = Member(*event.object, "metadata");
  if (md.is_object()) {
    event.resource_version = md.value("resourceVersion", "");
  }
  if (event.resource_version.empty()) {
    return InvalidArgument("watch event: object.metadata.resourceVersion: missing");
  }
  return event;
}

std::vector<std::string> LineSplitter::Feed(std::string_view data) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (true) {
    std::size_t nl = data.find('\n', start);
    if (nl == std::string_view::npos) {
      break;
    }
    pending_.append(data.substr(start, nl - start));
    if (!pending_.empty() && pending_.back() == '\r') {
      pending_.pop_back();
    }
    if (!pending_.empty()) {
      lines.push_back(std::move(pending_));
    }
    pending_.clear();
    start = nl + 1;
  }
  pending_.append(data.substr(start));
  return lines;
}

Result<ObjectInfo> ParseObjectInfo(const json& object) {
  try {
    return ParseObjectInfoImpl(object);
  } catch (const nlohmann::json::exception& e) {  // a field of an unexpected type
    return InvalidArgument(fmt::format("ParseObjectInfo: {}", e.what()));
  }
}

Result<ResourceClaimInfo> ParseResourceClaim(const json& object) {
  try {
    return ParseResourceClaimImpl(object);
  } catch (const nlohmann::json::exception& e) {  // a field of an unexpected type
    return InvalidArgument(fmt::format("ParseResourceClaim: {}", e.what()));
  }
}

Result<ResourceSliceInfo> ParseResourceSlice(const json& object) {
  try {
    return ParseResourceSliceImpl(object);
  } catch (const nlohmann::json::exception& e) {  // a field of an unexpected type
    return InvalidArgument(fmt::format("ParseResourceSlice: {}", e.what()));
  }
}

Result<ListPage> ParseListPage(std::string_view body) {
  try {
    return ParseListPageImpl(body);
  } catch (const nlohmann::json::exception& e) {  // a field of an unexpected type
    return InvalidArgument(fmt::format("ParseListPage: {}", e.what()));
  }
}

Result<WatchEvent> ParseWatchEvent(std::string_view line) {
  try {
    return ParseWatchEventImpl(line);
  } catch (const nlohmann::json::exception& e) {  // a field of an unexpected type
    return InvalidArgument(fmt::format("ParseWatchEvent: {}", e.what()));
  }
}

}  // namespace gpuledger::k8s
