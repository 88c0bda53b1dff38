#include "store/dimensions.h"

#include <fmt/format.h>

#include "common/strings.h"
#include "store/row_codec.h"

namespace gpuledger::store {
namespace {

std::size_t IndexOf(Dimension dimension) { return static_cast<std::size_t>(dimension); }

}  // namespace

const DimensionTable& TableOf(Dimension dimension) {
  static const std::array<DimensionTable, kDimensions.size()> kTables = {{
      {"gpus", {"uuid"}},
      // layout came with schema 10 (MigrateToPlacementLayouts); columns are only appended.
      {"placements", {"cluster", "node", "gpu_model", "sharing_mode", "pricing_class", "layout"}},
      // labels and namespace_labels came with schema 11 (MigrateToConsumerLabels).
      {"consumers",
       {"namespace", "pod", "pod_uid", "container", "owner_kind", "owner_name", "labels",
        "namespace_labels"},
       2},
      {"usage_contexts",
       {"node", "gpu_model", "sharing_mode", "device_id", "compute_quality", "memory_quality",
        "compute_rule", "activity_quality", "activity_rule", "share_source"}},
  }};
  return kTables[IndexOf(dimension)];
}

DimensionKey GpuKey(const DeviceHour& d) { return {d.gpu.str()}; }

DimensionKey PlacementKey(const DeviceHour& d) {
  return {d.cluster, d.node, d.gpu_model, std::string(ToString(d.sharing)), StoredPricingClass(d),
          d.layout};
}

DimensionKey ConsumerKey(const UsageRow& u) {
  const ConsumerRef& c = u.consumer.ref;
  return {c.namespace_name,
          c.pod,
          c.pod_uid.str(),
          c.container,
          u.consumer.owner_kind,
          u.consumer.owner_name,
          EncodeLabels(u.consumer.labels),
          EncodeLabels(u.consumer.namespace_labels)};
}

DimensionKey ContextKey(const UsageRow& u) {
  return {u.node,
          u.gpu_model,
          std::string(ToString(u.sharing)),
          u.device_id,
          std::string(ToString(u.compute_quality)),
          std::string(ToString(u.memory_quality)),
          u.compute_rule,
          std::string(ToString(u.activity_quality)),
          u.activity_rule,
          u.share_source};
}

// Length-prefixed, so no string inside a key can make two keys join alike.
std::string DimensionCache::Joined(const DimensionKey& key) {
  std::string out;
  for (const std::string& part : key) AppendLengthPrefixed(out, part);
  return out;
}

std::optional<std::int64_t> DimensionCache::Find(Dimension dimension,
                                                 const DimensionKey& key) const {
  const auto& ids = ids_[IndexOf(dimension)];
  auto it = ids.find(Joined(key));
  if (it == ids.end()) return std::nullopt;
  return it->second;
}

bool DimensionCache::Has(Dimension dimension, std::int64_t id) const {
  switch (dimension) {
    case Dimension::kGpu:
      return gpus_.contains(id);
    case Dimension::kPlacement:
      return placements_.contains(id);
    case Dimension::kConsumer:
      return consumers_.contains(id);
    case Dimension::kContext:
      return contexts_.contains(id);
  }
  return false;
}

Status DimensionCache::Learn(Dimension dimension, std::int64_t id, const DimensionKey& key) {
  const DimensionTable& table = TableOf(dimension);
  if (key.size() != table.columns.size()) {
    return Internal(fmt::format("{} id {}: {} columns, expected {}", table.table, id, key.size(),
                                table.columns.size()));
  }
  std::string what;
  switch (dimension) {
    case Dimension::kGpu:
      gpus_.Emplace(id).first = GpuUuid{key[0]};
      break;
    case Dimension::kPlacement: {
      DeviceHour p;
      p.cluster = key[0];
      p.node = key[1];
      p.gpu_model = key[2];
      auto sharing = ParseSharingMode(key[3]);
      if (!sharing) {
        return Internal(
            fmt::format("{} id {}: unknown sharing_mode '{}'", table.table, id, key[3]));
      }
      p.sharing = *sharing;
      DecodePricingClass(key[4], p);
      p.layout = key[5];
      placements_.Emplace(id).first = std::move(p);
      break;
    }
    case Dimension::kConsumer: {
      ConsumerInfo c{.ref = {key[0], key[1], PodUid{key[2]}, key[3]},
                     .owner_kind = key[4],
                     .owner_name = key[5]};
      if (!DecodeLabels(key[6], c.labels, &what) ||
          !DecodeLabels(key[7], c.namespace_labels, &what)) {
        return Internal(fmt::format("{} id {}: {}", table.table, id, what));
      }
      consumers_.Emplace(id).first = std::move(c);
      break;
    }
    case Dimension::kContext: {
      UsageRow u;
      static_cast<UsageRowContext&>(u) = {.node = key[0],
                                          .gpu_model = key[1],
                                          .device_id = key[3],
                                          .compute_rule = key[6],
                                          .activity_rule = key[8],
                                          .share_source = key[9]};
      if (!DecodeUsageEnums(u, key[2], key[4], key[5], &what) ||
          !DecodeActivityQuality(u, key[7], &what)) {
        return Internal(fmt::format("{} id {}: {}", table.table, id, what));
      }
      contexts_.Emplace(id).first = std::move(u);
      break;
    }
  }
  return Status::Ok();
}

void DimensionCache::Remember(Dimension dimension, const DimensionKey& key, std::int64_t id) {
  ids_[IndexOf(dimension)][Joined(key)] = id;
}

void DimensionCache::Trim() {
  auto trim = [](auto& by_id, auto& ids) {
    if (by_id.size() > kMaxEntries) by_id.clear();
    if (ids.size() > kMaxEntries) ids.clear();
  };
  trim(gpus_, ids_[IndexOf(Dimension::kGpu)]);
  trim(placements_, ids_[IndexOf(Dimension::kPlacement)]);
  trim(consumers_, ids_[IndexOf(Dimension::kConsumer)]);
  trim(contexts_, ids_[IndexOf(Dimension::kContext)]);
}

void DimensionCache::Clear() {
  for (auto& ids : ids_) ids.clear();
  gpus_.clear();
  placements_.clear();
  consumers_.clear();
  contexts_.clear();
}

void ApplyPlacement(const DeviceHour& p, DeviceHour& d) {
  static_cast<DeviceHourPlacement&>(d) = p;
}

void ApplyContext(const UsageRow& c, UsageRow& u) { static_cast<UsageRowContext&>(u) = c; }

}  // namespace gpuledger::store
