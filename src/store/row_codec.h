#pragma once
// What every ledger store does the same way with rows outside the hour records: the checks of a
// span before it is written, text columns as enums and label sets, and
// reconciliations read from any store's cursor. And schema 7's rows (device_hours and
// usage_hours, one row per device-hour and per usage row), which only the 7 -> 8 migration
// reads and the tests of older ledgers write: since schema 8 hours are compact records
// (store/compact_hours.h).

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "model/ledger.h"
#include "model/reconciliation.h"
#include "model/sharing.h"

namespace gpuledger::store {

// A label set as the consumers dictionary keeps it (schema 11): "" for none, else a JSON
// object in key order, so one set always encodes to the same text and people can read it.
using gpuledger::LabelMap;
std::string EncodeLabels(const LabelMap& labels);
// The set EncodeLabels wrote; false, with `what` saying why, for other text.
bool DecodeLabels(std::string_view text, LabelMap& labels, std::string* what);

// Sets row.sharing and its qualities from their stored text. false, with `what` saying which
// value was unknown, for a row this build cannot read.
bool DecodeUsageEnums(UsageRow& row, std::string_view sharing_mode,
                      std::string_view compute_quality, std::string_view memory_quality,
                      std::string* what);
// Sets row.activity_quality from its stored text (schema 5; 'none' for rows written before).
bool DecodeActivityQuality(UsageRow& row, std::string_view activity_quality, std::string* what);

// The histogram column (schema 7): "" for a row without one (UsageHistogram::empty(), and
// rows written before), else the counts "c0,c1,c2,c3,c4,c5;m0,m1,m2,m3" (compute, memory).
std::string EncodeHistogram(const UsageHistogram& h);
// Sets row.histogram from its stored text; false, with `what` saying why, for text that is not
// what EncodeHistogram writes.
bool DecodeHistogram(UsageRow& row, std::string_view text, std::string* what);

// The pricing_class column of a device-hour: its class, or "unpriced" for PriceState::kUnpriced
// (the column's text for that state since schema 1; in memory it is the typed state).
std::string StoredPricingClass(const DeviceHour& d);
void DecodePricingClass(std::string text, DeviceHour& d);

// The first row of `hours` no store may write (a device hour not at an hour start or without a
// GPU, a usage row filed under another device hour), or nullopt: every store checks a whole
// span before writing any of it.
struct RowProblem {
  std::string_view table;
  Micros hour_us = 0;
  std::string gpu;
  std::string what;
};
std::optional<RowProblem> CheckHours(std::span<const LedgerHour> hours);

// Schema 7's columns of device_hours and usage_hours, in the order the decoders below read them.
inline constexpr std::string_view kDeviceColumns =
    "hour_us, gpu_uuid, cluster, node, gpu_model, sharing_mode, pricing_class, price_nanos, "
    "metered_us, unmetered_us, unallocated_us, busy_us, idle_us, unattributed_us, "
    "memory_total_bytes, unattributed_memory_kib_s, energy_mj, idle_energy_mj, "
    "unattributed_energy_mj, energy_price_nanos";
inline constexpr std::string_view kUsageColumns =
    "hour_us, gpu_uuid, namespace, pod, pod_uid, container, owner_kind, owner_name, node, "
    "gpu_model, sharing_mode, device_id, allocated_us, compute_us, memory_kib_s, "
    "peak_memory_bytes, energy_mj, compute_quality, memory_quality, compute_rule, "
    "sm_active_us, sm_occupancy_us, tensor_active_us, dram_active_us, activity_quality, "
    "activity_rule, share_source, histogram";

inline constexpr std::string_view kReconciliationColumns =
    "node, day_us, modelled_nanos, billed_nanos, factor, factor_ppm, currency, bill_file, "
    "imported_at_us";

// A device-hour from a cursor on a row of kDeviceColumns; `Row` has Int(column), Text(column)
// and View(column) (valid until the cursor moves). The row's strings are assigned in place, so
// a row decoded again and again keeps their buffers. false, with `what` saying which value, for a
// row this build cannot read.
template <typename Row>
bool DecodeDeviceHour(Row& q, DeviceHour& d, std::string* what) {
  d.hour_us = q.Int(0);
  d.gpu.value.assign(q.View(1));
  d.cluster.assign(q.View(2));
  d.node.assign(q.View(3));
  d.gpu_model.assign(q.View(4));
  const std::string_view mode = q.View(5);
  auto sharing = ParseSharingMode(mode);
  if (!sharing) {
    *what = "unknown sharing_mode '" + std::string(mode) + "'";
    return false;
  }
  d.sharing = *sharing;
  DecodePricingClass(q.Text(6), d);
  d.price_nanos = q.Int(7);
  d.metered_us = q.Int(8);
  d.unmetered_us = q.Int(9);
  d.unallocated_us = q.Int(10);
  d.busy_us = q.Int(11);
  d.idle_us = q.Int(12);
  d.unattributed_us = q.Int(13);
  d.memory_total_bytes = q.Int(14);
  d.unattributed_memory_kib_s = q.Int(15);
  d.energy_mj = q.Int(16);
  d.idle_energy_mj = q.Int(17);
  d.unattributed_energy_mj = q.Int(18);
  d.energy_price_nanos = q.Int(19);
  return true;
}

// A usage row from a cursor on a row of kUsageColumns (labels not attached), as above.
template <typename Row>
bool DecodeUsageRow(Row& q, UsageRow& u, std::string* what) {
  u.hour_us = q.Int(0);
  u.gpu.value.assign(q.View(1));
  ConsumerRef& c = u.consumer.ref;
  c.namespace_name.assign(q.View(2));
  c.pod.assign(q.View(3));
  c.pod_uid.value.assign(q.View(4));
  c.container.assign(q.View(5));
  u.consumer.owner_kind.assign(q.View(6));
  u.consumer.owner_name.assign(q.View(7));
  u.node.assign(q.View(8));
  u.gpu_model.assign(q.View(9));
  const std::string_view mode = q.View(10);
  u.device_id.assign(q.View(11));
  u.allocated_us = q.Int(12);
  u.compute_us = q.Int(13);
  u.memory_kib_s = q.Int(14);
  u.peak_memory_bytes = q.Int(15);
  u.energy_mj = q.Int(16);
  const std::string_view compute_quality = q.View(17);
  const std::string_view memory_quality = q.View(18);
  u.compute_rule.assign(q.View(19));
  u.activity.sm_active_us = q.Int(20);
  u.activity.sm_occupancy_us = q.Int(21);
  u.activity.tensor_active_us = q.Int(22);
  u.activity.dram_active_us = q.Int(23);
  const std::string_view activity_quality = q.View(24);
  u.activity_rule.assign(q.View(25));
  u.share_source.assign(q.View(26));
  const std::string_view histogram = q.View(27);
  return DecodeUsageEnums(u, mode, compute_quality, memory_quality, what) &&
         DecodeActivityQuality(u, activity_quality, what) && DecodeHistogram(u, histogram, what);
}

// A reconciliation from a cursor on a row of kReconciliationColumns.
template <typename Row>
Reconciliation DecodeReconciliation(Row& q) {
  Reconciliation r;
  r.node = q.Text(0);
  r.day_us = q.Int(1);
  r.modelled_nanos = q.Int(2);
  r.billed_nanos = q.Int(3);
  r.factor = q.Text(4);
  r.factor_ppm = q.Int(5);
  r.currency = q.Text(6);
  r.bill_file = q.Text(7);
  r.imported_at_us = q.Int(8);
  return r;
}

}  // namespace gpuledger::store
