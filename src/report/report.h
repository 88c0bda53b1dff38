#pragma once
// Chargeback reports: ledger rows priced by a cost policy and grouped by any key
// (`gpuledger report`, later `/api/v1/allocation`). Pure: rows in, report out.
//
// Exactness: every device-hour's price is split by cost::SplitDeviceHour, so
//   Σ rows.cost + idle.cost + unattributed.cost == total.device_cost_nanos   exactly.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/time_range.h"
#include "cost/policy.h"
#include "model/ledger.h"
#include "utilization/classify.h"

namespace gpuledger::report {

// One level of a grouping key.
struct Dimension {
  enum class Kind {
    kCluster,
    kNamespace,
    kLabel,
    kController,
    kNode,
    kGpuModel,
    kDevice,
    kContainer,
    kPod,
    kSharingMode,
    // Everything a key reads, as one level (EncodeEntry): a closed statement's rows, which any
    // grouping can regroup (ledger/statements.h). Not a grouping users ask for.
    kEntry
  };
  Kind kind = Kind::kNamespace;
  std::string label;  // kLabel: the label key
  friend bool operator==(const Dimension&, const Dimension&) = default;
};

// "cluster", "namespace", "label:team", "controller", "node", "gpu_model", "device",
// "container", "pod", "sharing_mode", or several joined by commas ("namespace,label:team"):
// each at most once, at most kMaxGroupLevels in all.
inline constexpr std::size_t kMaxGroupLevels = 8;
Result<std::vector<Dimension>> ParseGroupBy(std::string_view text);
std::string ToString(const std::vector<Dimension>& dims);

// The key value of a grouping by a label for a consumer without the label.
inline constexpr std::string_view kUnlabelled = "unlabelled";

// The key value a usage row has for a grouping; levels joined by '/'. A missing label is
// kUnlabelled; a pod label wins over its namespace's label of the same key. A usage row does
// not name its cluster (its device-hour does): grouping by cluster takes the Placed form.
std::string KeyOf(const UsageRow& row, const std::vector<Dimension>& dims);
// Where a row was, as a key reads it (its device-hour's cluster, a UsageRow's node, model, GPU
// and mode).
struct Placed {
  const std::string& cluster;
  const std::string& node;
  const std::string& gpu_model;
  const GpuUuid& gpu;
  SharingMode sharing;
};
// The same key for a consumer placed so, without a UsageRow.
std::string KeyOf(const ConsumerInfo& consumer, const Placed& placed,
                  const std::vector<Dimension>& dims);
// The same, the consumer's label sets held apart from it.
std::string KeyOf(const ConsumerInfo& consumer, const ConsumerLabels& labels, const Placed& placed,
                  const std::vector<Dimension>& dims);
// The workload a consumer runs in: its key by controller ("namespace/Kind/name", as `report
// --by controller` keys it), or "" for host consumers and unresolved processes, which run in
// none. What rightsizing sizes and what a finding about the consumer names.
std::string WorkloadOf(const ConsumerInfo& consumer);

// A consumer placed so, as one key level (Dimension::Kind::kEntry): its ref, owner, pod and
// namespace labels, and the cluster, node, model, GPU and mode, each length-prefixed.
std::string EncodeEntry(const ConsumerInfo& consumer, const ConsumerLabels& labels,
                        const Placed& placed);
// What EncodeEntry wrote; nullopt for other text.
struct Entry {
  ConsumerInfo consumer;
  std::string cluster;
  std::string node;
  std::string gpu_model;
  GpuUuid gpu;
  SharingMode sharing = SharingMode::kExclusive;
  Placed placed() const { return Placed{cluster, node, gpu_model, gpu, sharing}; }
};
std::optional<Entry> DecodeEntry(std::string_view key);

struct Figures {
  GpuMicros allocated_gpu_us = 0;
  GpuMicros compute_gpu_us = 0;
  KibSeconds memory_kib_s = 0;  // memory held over time: KiB held for one second
  MilliJoules energy_mj = 0;
  Nanos cost_nanos = 0;
  Quality quality = Quality::kNone;  // compute quality: measured only if all of it was
  std::string compute_rule;          // the rows' compute rules, merged (MergeRules)
  // SM/tensor/DRAM activity (sums, GPU-µs of the physical GPU), and the allocated and compute
  // time of the ledger rows that carried activity (activity_quality not kNone): the part of the
  // window the activity fractions are taken over.
  Activity activity;
  GpuMicros activity_allocated_gpu_us = 0;
  GpuMicros activity_compute_gpu_us = 0;
  Quality activity_quality = Quality::kNone;  // the worst of the rows that had activity
  std::string activity_rule;                  // their rules, merged (MergeRules)
  // The granted share of the devices' memory over time: Σ memory_total x allocated_us, KiB-s.
  KibSeconds granted_memory_kib_s = 0;
  std::string share_source;  // where declared shares came from, merged; "" for none
  // What the per-device method (a device exporter's values joined to the pods on the device)
  // would have said: each of the group's rows counted with its device-hour's whole busy time
  // and whole price. A contrast, never billed: on a shared GPU it counts the device once per
  // consumer. Summed saturating (AddSaturating).
  GpuMicros naive_compute_gpu_us = 0;
  Nanos naive_cost_nanos = 0;
  // The least GPU time it can have used: its rows' ComputeFloor (model/compute_band.h) summed,
  // what an uncertain estimate still vouches for (utilization/classify.h).
  GpuMicros compute_floor_gpu_us = 0;
  void Add(const Figures& other);
};

// A figure's origin as the agent writes compute_source: "<quality>" or "<quality>:<rule>";
// "none" for Quality::kNone. ParseSource is its inverse (kInvalidArgument for other text).
std::string FormatSource(Quality quality, const std::string& rule);
Result<std::pair<Quality, std::string>> ParseSource(std::string_view text);

// The utilization class of a row's figures (utilization/classify.h).
utilization::Inputs UtilizationInputs(const Figures& f);

struct Row {
  std::string key;
  Figures figures;
  utilization::Classification utilization;  // Classify(UtilizationInputs(figures))
};

struct Totals {
  Nanos device_cost_nanos = 0;  // Σ of the device-hour prices in the window
  GpuMicros metered_us = 0;
  GpuMicros unmetered_us = 0;
  GpuMicros busy_us = 0;
  int device_hours = 0;
  std::vector<std::string> unpriced_models;  // models whose device-hours carried no price
  // Adds another part's sums; unpriced_models is left to the caller (who keeps a set).
  void AddSums(const Totals& other) {
    device_cost_nanos += other.device_cost_nanos;
    metered_us += other.metered_us;
    unmetered_us += other.unmetered_us;
    busy_us += other.busy_us;
    device_hours += other.device_hours;
  }
};

// Cost descending, then key: the order of every report's rows.
void SortRows(std::vector<Row>& rows);

// A closed statement a report was read from (ledger/statements.h); a report without any is the
// ledger's live figures.
struct StatementRef {
  std::string period;  // "2026-11"
  int version = 0;
  Micros closed_at_us = 0;
  std::string build;
  bool operator==(const StatementRef&) const = default;
};

// Late data for a closed month (issue 38): what the ledger holds for it now less what its latest
// statement booked, carried into the first open month after it until it is closed again. Each
// group's, idle's and unattributed cost, and the device cost, as the live figures less the
// statement's; groups whose cost did not move are left out.
struct Adjustment {
  std::string period;  // the closed month, "2026-11"
  int version = 0;     // its latest statement, which the figures are against
  std::vector<std::pair<std::string, Nanos>> rows;  // by key, in key order
  Nanos idle_cost_nanos = 0;
  Nanos unattributed_cost_nanos = 0;
  Nanos device_cost_nanos = 0;
  bool operator==(const Adjustment&) const = default;
};

struct Report {
  Micros from_us = 0;
  Micros to_us = 0;
  std::vector<Dimension> group_by;
  cost::Policy policy;
  cost::IdleHandling idle_handling;
  std::vector<Row> rows;  // sorted by cost descending, then key
  Figures idle;           // unallocated / not busy / unused memory, and its cost
  Figures unattributed;   // busy time and memory no known process explains
  Totals total;
  // The closed months whose frozen figures it holds, in month order (the other months of its
  // window are the ledger's live figures).
  std::vector<StatementRef> statements;
  // A month's report: the closed months before it whose late data it carries (beside its own
  // figures, never in them).
  std::vector<Adjustment> adjustments;
  // What the ledger holds (its first hour's start to its last hour's end) when the window
  // reaches past it (ReachPast, report/window.h), where nothing is recorded; else nullopt.
  std::optional<TimeRange> ledger;
};

// The sums a report over some rows takes, checked to fit in 64 bits: BuildReport's own check,
// for readers that keep rows their own way (ledger/snapshot.h). Add every row of the window.
class SumCheck {
 public:
  static constexpr int kDeviceSums = 9;
  static constexpr int kUsageSums = 7;
  // The sums as words, each sum's high half then its low half, and back: what a day kept
  // summed (ledger/day_rollup.h) carries, so days read that way are checked as their rows.
  static constexpr int kWords = 2 * (kDeviceSums + kUsageSums);
  std::array<std::uint64_t, kWords> Words() const;
  static SumCheck FromWords(const std::array<std::uint64_t, kWords>& words);

  void AddDevice(const DeviceHour& device);
  void AddUsage(const cost::ConsumerWeights& weights, const Activity& activity);
  void Merge(const SumCheck& other);  // the sums of both sets of rows
  // kInvalidArgument naming the first quantity that does not fit.
  Status Check() const;

 private:
  __int128 device_[kDeviceSums] = {};
  __int128 usage_[kUsageSums] = {};
};

// Memory-time sums saturate rather than wrap: a year of a 141 GB GPU is 4.3e15 KiB-s, so the
// idle row of a report over a year of thousands of GPUs comes within reach of int64.
KibSeconds AddKibSeconds(KibSeconds a, KibSeconds b);
// a + b, held at INT64_MAX or INT64_MIN rather than wrapping (figures that are not billed).
std::int64_t AddSaturating(std::int64_t a, std::int64_t b);

// The row idle handling namespace:NS charges a device's idle cost to, for its key: consumer
// NS/__idle__, owner Idle/__idle__, on that device (no labels: the caller adds NS's).
UsageRow PlatformIdleRow(const std::string& namespace_name, const std::string& node,
                         const std::string& gpu_model, const GpuUuid& gpu, SharingMode sharing);

// Rows outside [from_us, to_us) are ignored. `usage` rows whose (hour, gpu) has no device row
// are ignored too (a device-hour is the unit of price). Every figure is exact: a window whose
// sums would not fit in 64 bits (a cost past 9,223,372,036.854775807 in the currency, a time
// past 292,000 GPU-years) is kInvalidArgument naming the quantity, never a wrapped total.
Result<Report> BuildReport(std::span<const DeviceHour> devices, std::span<const UsageRow> usage,
                           const std::vector<Dimension>& group_by, const cost::Policy& policy,
                           const cost::IdleHandling& idle, Micros from_us, Micros to_us);

}  // namespace gpuledger::report
