#pragma once
// The ledger's dictionaries (schema 8, issue 37): the strings rows used to repeat (GPU UUIDs;
// cluster, node, model, mode and pricing class of a device-hour; a consumer, its owner and the
// labels in force when its row was written (schema 11: a relabelled pod or namespace is a new
// entry, so past hours keep their labels); a
// usage row's device, qualities and rules) are each kept once, as a row of their own table,
// and the hour records (store/hour_record.h) hold their integer ids. Ids are assigned by the
// database, never reused or changed, so a cached id stays right for as long as the ledger
// exists.
//
// A dictionary entry is a whole tuple rather than one string per column: a device-hour names
// one placement and a usage row one context, so a row holds two ids instead of ten, and the
// tuples are few (placements grow with nodes, contexts with devices and rule sets).

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/dense_id_map.h"
#include "common/result.h"
#include "model/ledger.h"

namespace gpuledger::store {

enum class Dimension { kGpu, kPlacement, kConsumer, kContext };
inline constexpr std::array<Dimension, 4> kDimensions = {Dimension::kGpu, Dimension::kPlacement,
                                                         Dimension::kConsumer, Dimension::kContext};

// A dictionary's table: `id` plus these text columns, unique together. The last
// `long_columns` may be long (a label set): a dialect whose index entries are bounded keys
// them by a digest (SqlDialect::long_text_key).
struct DimensionTable {
  std::string_view table;
  std::vector<std::string_view> columns;
  std::size_t long_columns = 0;
};
const DimensionTable& TableOf(Dimension dimension);

// A dictionary entry as stored: one string per column of its table.
using DimensionKey = std::vector<std::string>;

DimensionKey GpuKey(const DeviceHour& d);
DimensionKey PlacementKey(const DeviceHour& d);
DimensionKey ConsumerKey(const UsageRow& u);
DimensionKey ContextKey(const UsageRow& u);

// Ids and entries of the dictionaries as far as this connection has seen them: entries by id
// for reading rows, ids by entry for writing them. Entries are checked once, when learned (an
// unknown sharing mode or quality is an error naming it), and kept typed, so a row reads its
// strings by copying. Bounded: a dictionary past kMaxEntries is forgotten at the next Trim
// (the database keeps it all), so a process reading a day at a time holds about a day's.
class DimensionCache {
 public:
  static constexpr std::size_t kMaxEntries = 1 << 16;

  // The id of a key written or looked up before (Remember).
  std::optional<std::int64_t> Find(Dimension dimension, const DimensionKey& key) const;
  void Remember(Dimension dimension, const DimensionKey& key, std::int64_t id);
  bool Has(Dimension dimension, std::int64_t id) const;
  // Remembers that `id` is `key` for reading; kInternal, naming the value, for a key this
  // build cannot read.
  Status Learn(Dimension dimension, std::int64_t id, const DimensionKey& key);
  // Forgets every dictionary past kMaxEntries; called between operations, never during one.
  void Trim();
  // Forgets everything (after a write that rolled back: ids it added no longer exist).
  void Clear();

  // The entries of learned ids (Has() must be true): the GPU's UUID; a DeviceHour with
  // cluster, node, model, sharing, pricing class and price state set; a consumer with its
  // labels; a UsageRow with node, model, sharing, device, qualities and rules set.
  const GpuUuid& Gpu(std::int64_t id) const { return *gpus_.Find(id); }
  const DeviceHour& Placement(std::int64_t id) const { return *placements_.Find(id); }
  const ConsumerInfo& Consumer(std::int64_t id) const { return *consumers_.Find(id); }
  const UsageRow& Context(std::int64_t id) const { return *contexts_.Find(id); }

 private:
  static std::string Joined(const DimensionKey& key);
  std::array<std::unordered_map<std::string, std::int64_t>, kDimensions.size()> ids_;
  // By id: dense arrays, read for every row of a scan.
  DenseIdMap<GpuUuid> gpus_;
  DenseIdMap<DeviceHour> placements_;
  DenseIdMap<ConsumerInfo> consumers_;
  DenseIdMap<UsageRow> contexts_;
};

// Copies a placement's strings into a device-hour and a context's into a usage row.
void ApplyPlacement(const DeviceHour& placement, DeviceHour& d);
void ApplyContext(const UsageRow& context, UsageRow& u);

}  // namespace gpuledger::store
