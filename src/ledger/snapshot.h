#pragma once
// A ledger range held in memory as columns (issue 32): what every report, allocation and device
// read needs, read once from one store snapshot and priced as billed. Strings are kept once in
// dictionaries (consumers, placements, rules); the rows hold integers. Immutable once loaded,
// so any number of readers share it.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "common/time_range.h"
#include "cost/policy.h"
#include "ledger/packed_column.h"
#include "ledger/packed_figures.h"
#include "model/ledger.h"
#include "model/reconciliation.h"
#include "report/report.h"
#include "store/ledger_store.h"

namespace gpuledger::ledger {

// Where a row was: what a grouping or filter by node, model, device or mode reads.
struct Placement {
  std::string cluster;
  std::string node;
  std::string gpu_model;
  GpuUuid gpu;
  SharingMode sharing = SharingMode::kExclusive;
  std::string pricing_class;
  std::string layout;  // DeviceHour::layout
  auto operator<=>(const Placement&) const = default;
};

// What a usage row's context key says, with the row's placement: interned, as few as the
// placements times the device ids, qualities and rules met on them.
struct RowContext {
  std::uint32_t placement = 0;  // Snapshot::placements()
  std::uint32_t device_id = 0;  // Snapshot::device_ids(): the replica or MIG instance held
  Quality compute_quality = Quality::kNone;
  Quality activity_quality = Quality::kNone;
  std::uint16_t compute_rule = 0;  // Snapshot::rules(); 0 is ""
  std::uint16_t activity_rule = 0;
  std::uint16_t share_source = 0;
  auto operator<=>(const RowContext&) const = default;
};

// The usage rows as columns, grouped by device-hour: the rows of device d are
// [first_usage[d], first_usage[d + 1]), in the store's order. 44 bytes a row (was 86): the
// figures packed (packed_figures.h), what the context key says interned.
struct UsageColumns {
  std::vector<std::uint32_t> consumer;  // Snapshot::consumers()
  std::vector<std::uint32_t> context;   // Snapshot::contexts()
  PackedColumn<PackedUsage> figures;

  std::size_t size() const { return consumer.size(); }
  void push_back(std::uint32_t consumer_index, std::uint32_t context_index, const UsageFigures& f) {
    consumer.push_back(consumer_index);
    context.push_back(context_index);
    figures.push_back(f);
  }
  // The bytes the rows take (the reserved room aside).
  std::size_t bytes() const { return size() * 2 * sizeof(std::uint32_t) + figures.bytes(); }
  // Calls f(column) for every column: what is done to all of them alike (clear, reserve, keep).
  template <typename F>
  void ForEachColumn(F&& f) {
    f(consumer);
    f(context);
    f(figures);
  }
};

class Snapshot {
 public:
  // Reads `range` widened to whole UTC days (a bill scales whole node-days) from one store
  // snapshot: reconciled node-days at their bill (billing/reconciled_prices.h). Usage rows whose
  // device-hour is missing are left out, as reports leave them out.
  static Result<std::shared_ptr<const Snapshot>> Load(store::LedgerStore& store,
                                                      const TimeRange& range);
  // As Load, into `recycled` (a snapshot loaded before, that nothing else holds now): its
  // columns keep their capacity, so a reader of many parts (ReadReports, a day at a time)
  // allocates and faults its memory in once, not per part.
  static Result<std::shared_ptr<const Snapshot>> Load(store::LedgerStore& store,
                                                      const TimeRange& range,
                                                      std::shared_ptr<Snapshot> recycled);
  // `kept` (a snapshot of this ledger) brought to what Load(store, range) reads now, when only
  // the hours of `changed` changed since it was loaded (LedgerStore::ChangesSince): its rows
  // before the first changed hour (or, when a bill priced that hour's day, before the day) are
  // kept, the hours from there to the range's end read again, and days before the range
  // dropped. Reports over the result equal those over a fresh Load
  // (its dictionaries may hold entries in another order). `kept` is refreshed in place when
  // nothing else holds it, else copied; on an error it must not be used again. A `kept` that
  // does not reach back to the range's start is loaded whole.
  static Result<std::shared_ptr<const Snapshot>> Refresh(store::LedgerStore& store,
                                                         std::shared_ptr<const Snapshot> kept,
                                                         const TimeRange& range,
                                                         const TimeRange& changed);

  const TimeRange& range() const { return range_; }
  const PackedColumn<PackedDevice>& devices() const { return devices_; }
  const std::vector<std::uint32_t>& first_usage() const { return first_usage_; }
  const UsageColumns& usage() const { return usage_; }
  // Each without its label maps (labels(c) has them), which are kept once per distinct set: a
  // workload's replicas share theirs and a namespace's pods its own, and a real pod carries
  // kilobytes of them.
  const std::vector<ConsumerInfo>& consumers() const { return consumers_; }
  // Consumer c's labels as its rows were written: a relabelled pod or namespace is a consumer
  // per label set (schema 11).
  ConsumerLabels labels(std::size_t c) const {
    return {label_sets_[consumer_labels_[c].pod], label_sets_[consumer_labels_[c].space]};
  }
  // The distinct label sets its consumers name (0: the empty one).
  const std::vector<LabelMap>& label_sets() const { return label_sets_; }
  const std::vector<Placement>& placements() const { return placements_; }
  const std::vector<RowContext>& contexts() const { return contexts_; }
  const std::vector<std::string>& rules() const { return rules_; }
  // The devices rows held (UsageRow::device_id: a replica, a MIG instance or the GPU); 0 is "".
  const std::vector<std::string>& device_ids() const { return device_ids_; }
  // Whether every sum a report over any window of this snapshot takes fits in 64 bits.
  bool sums_fit() const { return sums_.Check().ok(); }
  // The magnitude sums of every row of the snapshot (report::SumCheck).
  const report::SumCheck& sums() const { return sums_; }
  // The devices of hours [from_us, to_us): an index range into devices().
  std::pair<std::size_t, std::size_t> DeviceRange(Micros from_us, Micros to_us) const;

  // A device-hour whose node-day was billed: its price as modelled (the catalog's, before the
  // bill scaled it) and the bill's reconciliation. nullptr for every other device-hour.
  struct Reconciled {
    Nanos modelled_nanos = 0;
    std::uint32_t reconciliation = 0;  // in reconciliations()
  };
  const Reconciled* ReconciledOf(std::size_t d) const {
    auto it = reconciled_.find(static_cast<std::uint32_t>(d));
    return it == reconciled_.end() ? nullptr : &it->second;
  }

  // The bills of the snapshot's node-days.
  const std::vector<Reconciliation>& reconciliations() const { return reconciliations_; }

  // Device d's numbers (and sharing mode) into a DeviceHour, e.g. to split its price; its
  // strings are left as they are (the placement has them).
  void FillDeviceNumbers(std::size_t d, DeviceHour& out) const {
    FillDeviceNumbers(devices_[d], out);
  }
  void FillDeviceNumbers(const DeviceFigures& f, DeviceHour& out) const;

 private:
  friend class SnapshotLoader;
  // Empties every column and table, keeping the columns' capacity.
  void Clear();
  // Keeps the rows of hours [from_us, to_us) and the bills of days starting in it; drops the
  // dictionary entries no kept row names once rows before from_us went (so a refreshed
  // snapshot stays bounded).
  void Keep(Micros from_us, Micros to_us);
  void DropUnusedEntries();
  // sums_ from hour_sums_.
  void SumHours();
  // The sums of every hour's rows (sums_ is their merge): a refresh drops and re-reads hours.
  std::map<Micros, report::SumCheck> hour_sums_;
  TimeRange range_;
  PackedColumn<PackedDevice> devices_;
  std::vector<std::uint32_t> first_usage_;
  UsageColumns usage_;
  std::vector<ConsumerInfo> consumers_;
  std::vector<std::int64_t> consumer_keys_;  // each consumer's key in the ledger's scans
  struct LabelIds {
    std::uint32_t pod = 0;    // in label_sets_
    std::uint32_t space = 0;  // its namespace's
  };
  std::vector<LabelIds> consumer_labels_;  // by consumer
  std::vector<LabelMap> label_sets_;       // distinct; 0 is the empty set
  std::vector<Placement> placements_;
  std::vector<RowContext> contexts_;
  std::vector<std::string> rules_;
  std::vector<std::string> device_ids_;
  std::vector<Reconciliation> reconciliations_;
  std::unordered_map<std::uint32_t, Reconciled> reconciled_;
  report::SumCheck sums_;
};

}  // namespace gpuledger::ledger
