// The Kubernetes API server's answers: list pages (pods, namespaces, nodes, ReplicaSets, Jobs,
// ResourceClaims, ResourceSlices) and watch events, one JSON document per line, and the
// metadata snapshot file the server reads beside a ledger.

#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "k8s/k8s_objects.h"
#include "k8s/metadata_snapshot.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  namespace k8s = gpuledger::k8s;
  // Every item through each kind's parser, as the resource cache does.
  auto each_kind = [](const nlohmann::json& object) {
    (void)k8s::ParseObjectInfo(object);
    (void)k8s::ParseResourceClaim(object);
    (void)k8s::ParseResourceSlice(object);
  };
  if (auto page = k8s::ParseListPage(text))
    for (const nlohmann::json& item : page->items) each_kind(item);
  (void)k8s::ParseMetadataSnapshot(text, "fuzz.json");
  std::string_view rest = text;
  for (int i = 0; i < 64 && !rest.empty(); ++i) {
    const auto end = rest.find('\n');
    if (auto event = k8s::ParseWatchEvent(rest.substr(0, end))) each_kind(*event->object);
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  return 0;
}
