#pragma once
// Strong ids: a PodUid cannot be passed where a GpuUuid is expected.

#include <compare>
#include <functional>
#include <string>
#include <utility>

namespace gpuledger {

template <typename Tag>
struct StrongId {
  std::string value;

  StrongId() = default;
  explicit StrongId(std::string v) : value(std::move(v)) {}
  bool empty() const { return value.empty(); }
  const std::string& str() const { return value; }
  auto operator<=>(const StrongId&) const = default;
};

using GpuUuid = StrongId<struct GpuUuidTag>;  // physical GPU or MIG instance: GPU-..., MIG-...
using PodUid = StrongId<struct PodUidTag>;
using ContainerId = StrongId<struct ContainerIdTag>;  // runtime container id (64 hex)

}  // namespace gpuledger

template <typename Tag>
struct std::hash<gpuledger::StrongId<Tag>> {
  std::size_t operator()(const gpuledger::StrongId<Tag>& id) const noexcept {
    return std::hash<std::string>{}(id.value);
  }
};
