#include "k8s/endpoints.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace gpuledger::k8s {

Result<ServiceRef> ParseServiceRef(std::string_view text) {
  auto bad = [&] {
    return InvalidArgument(fmt::format(
        "'{}': expected NAMESPACE/SERVICE[:PORT], e.g. gpuledger/gpuledger-agent:metrics", text));
  };
  auto slash = text.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 >= text.size()) return bad();
  ServiceRef ref;
  ref.namespace_name = std::string(text.substr(0, slash));
  std::string_view rest = text.substr(slash + 1);
  if (auto colon = rest.find(':'); colon != std::string_view::npos) {
    ref.port = std::string(rest.substr(colon + 1));
    rest = rest.substr(0, colon);
    if (ref.port.empty()) return bad();
  }
  if (rest.empty()) return bad();
  ref.name = std::string(rest);
  return ref;
}

Result<std::vector<std::string>> EndpointTargets(std::string_view endpoints_json,
                                                 const ServiceRef& service) {
  using nlohmann::json;
  std::vector<std::string> targets;
  try {
    const json j = json::parse(endpoints_json);
    std::vector<json> objects;
    if (j.value("kind", "") == "Endpoints") {
      objects.push_back(j);
    } else if (j.value("kind", "") == "EndpointsList") {
      for (const json& item : j.value("items", json::array())) {
        const json md = item.value("metadata", json::object());
        if (md.value("namespace", "") == service.namespace_name &&
            md.value("name", "") == service.name)
          objects.push_back(item);
      }
    } else {
      return InvalidArgument(
          fmt::format("{}/{}: not an Endpoints object", service.namespace_name, service.name));
    }
    if (objects.empty())
      return NotFound(fmt::format("no Endpoints {}/{}", service.namespace_name, service.name));
    for (const json& object : objects)
      for (const json& subset : object.value("subsets", json::array())) {
        const json ports = subset.value("ports", json::array());
        int port = -1;
        for (const json& p : ports) {
          const std::string name = p.value("name", "");
          const int number = p.value("port", -1);
          if (service.port.empty() || service.port == name ||
              service.port == std::to_string(number)) {
            port = number;
            break;
          }
        }
        if (port <= 0) continue;
        const json addresses = subset.value("addresses", json::array());
        for (const json& a : addresses)
          targets.push_back(fmt::format("{}:{}", a.value("ip", ""), port));
      }
  } catch (const std::exception& e) {
    return InvalidArgument(fmt::format("{}/{}: malformed Endpoints: {}", service.namespace_name,
                                       service.name, e.what()));
  }
  std::sort(targets.begin(), targets.end());
  return targets;
}

Result<std::vector<std::string>> DiscoverTargets(ApiTransport& transport,
                                                 const ServiceRef& service) {
  // A cluster-wide list narrowed by name: the same RBAC (list) the metadata watch already needs.
  auto res = transport.Get(
      fmt::format("/api/v1/endpoints?fieldSelector=metadata.name%3D{}", service.name));
  if (!res) return res.error();
  if (res->status != 200)
    return Unavailable(
        fmt::format("endpoints {}/{}: HTTP {}", service.namespace_name, service.name, res->status));
  return EndpointTargets(res->body, service);
}

}  // namespace gpuledger::k8s
