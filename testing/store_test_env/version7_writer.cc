#include "store_test_env/version7_writer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <map>
#include <tuple>
#include <variant>
#include <vector>

#include "store/postgres_db.h"
#include "store/postgres_schema.h"
#include "store/row_codec.h"
#include "store/sqlite_db.h"
#include "store/sqlite_schema.h"

namespace gpuledger::store::testing {
namespace {

using Value = std::variant<std::int64_t, std::string>;

constexpr std::string_view kPodLabelColumns = "namespace, pod, pod_uid, key, value";
constexpr std::string_view kNamespaceLabelColumns = "namespace, key, value";

// A device-hour's values in the order of kDeviceColumns.
std::vector<Value> DeviceValues(const DeviceHour& d) {
  return {d.hour_us,
          d.gpu.str(),
          d.cluster,
          d.node,
          d.gpu_model,
          std::string(ToString(d.sharing)),
          StoredPricingClass(d),
          d.price_nanos,
          d.metered_us,
          d.unmetered_us,
          d.unallocated_us,
          d.busy_us,
          d.idle_us,
          d.unattributed_us,
          d.memory_total_bytes,
          d.unattributed_memory_kib_s,
          d.energy_mj,
          d.idle_energy_mj,
          d.unattributed_energy_mj,
          d.energy_price_nanos};
}

// A usage row's values in the order of kUsageColumns.
std::vector<Value> UsageValues(const UsageRow& u) {
  const ConsumerRef& c = u.consumer.ref;
  return {u.hour_us,
          u.gpu.str(),
          c.namespace_name,
          c.pod,
          c.pod_uid.str(),
          c.container,
          u.consumer.owner_kind,
          u.consumer.owner_name,
          u.node,
          u.gpu_model,
          std::string(ToString(u.sharing)),
          u.device_id,
          u.allocated_us,
          u.compute_us,
          u.memory_kib_s,
          u.peak_memory_bytes,
          u.energy_mj,
          std::string(ToString(u.compute_quality)),
          std::string(ToString(u.memory_quality)),
          u.compute_rule,
          u.activity.sm_active_us,
          u.activity.sm_occupancy_us,
          u.activity.tensor_active_us,
          u.activity.dram_active_us,
          std::string(ToString(u.activity_quality)),
          u.activity_rule,
          u.share_source,
          EncodeHistogram(u.histogram)};
}

std::string InsertSql(std::string_view table, std::string_view columns, std::size_t count,
                      char placeholder) {
  std::vector<std::string> values;
  for (std::size_t i = 1; i <= count; ++i) values.push_back(fmt::format("{}{}", placeholder, i));
  return fmt::format("INSERT INTO {} ({}) VALUES ({})", table, columns, fmt::join(values, ","));
}

Status RunSqlite(SqliteDb& db, std::string_view table, std::string_view columns,
                 const std::vector<Value>& values) {
  auto stmt = db.Prepare(InsertSql(table, columns, values.size(), '?'), "insert");
  if (!stmt) return stmt.status();
  for (std::size_t i = 0; i < values.size(); ++i) {
    const int index = static_cast<int>(i) + 1;
    if (const auto* n = std::get_if<std::int64_t>(&values[i])) {
      stmt->Bind(index, *n);
    } else {
      stmt->Bind(index, std::string_view(std::get<std::string>(values[i])));
    }
  }
  return stmt->Run();
}

Status RunPostgres(PgConn& conn, std::string_view table, std::string_view columns,
                   const std::vector<Value>& values) {
  PgParams params;
  for (const Value& v : values) {
    if (const auto* n = std::get_if<std::int64_t>(&v)) {
      params.Add(*n);
    } else {
      params.Add(std::get<std::string>(v));
    }
  }
  auto r = conn.Exec("insert", InsertSql(table, columns, values.size(), '$'), params);
  return r ? Status::Ok() : r.status();
}

// The label rows the hours carry, as a store writes them: per pod and per namespace, the last
// row naming it wins.
struct LabelRows {
  std::vector<std::vector<Value>> pods;        // namespace, pod, pod_uid, key, value
  std::vector<std::vector<Value>> namespaces;  // namespace, key, value
};
LabelRows LabelsOf(std::span<const LedgerHour> hours) {
  std::map<std::tuple<std::string, std::string, std::string>, std::map<std::string, std::string>>
      pods;
  std::map<std::string, std::map<std::string, std::string>> namespaces;
  for (const LedgerHour& hour : hours) {
    for (const UsageRow& u : hour.usage) {
      const ConsumerRef& c = u.consumer.ref;
      if (!u.consumer.labels.empty())
        pods[{c.namespace_name, c.pod, c.pod_uid.str()}] = u.consumer.labels;
      namespaces[c.namespace_name] = u.consumer.namespace_labels;
    }
  }
  LabelRows out;
  for (const auto& [pod, labels] : pods)
    for (const auto& [k, v] : labels)
      out.pods.push_back({std::get<0>(pod), std::get<1>(pod), std::get<2>(pod), k, v});
  for (const auto& [ns, labels] : namespaces)
    for (const auto& [k, v] : labels) out.namespaces.push_back({ns, k, v});
  return out;
}

}  // namespace

Status WriteSqliteVersion7(const std::string& path, std::span<const LedgerHour> hours) {
  auto db = SqliteDb::Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (!db) return db.status();
  if (Status s = MigrateSqliteLedgerTo(**db, /*read_only=*/false, 7); !s) return s;
  for (const LedgerHour& hour : hours) {
    if (Status s = RunSqlite(**db, "device_hours", kDeviceColumns, DeviceValues(hour.device)); !s)
      return s;
    for (const UsageRow& u : hour.usage)
      if (Status s = RunSqlite(**db, "usage_hours", kUsageColumns, UsageValues(u)); !s) return s;
  }
  const LabelRows labels = LabelsOf(hours);
  for (const auto& row : labels.pods)
    if (Status s = RunSqlite(**db, "pod_labels", kPodLabelColumns, row); !s) return s;
  for (const auto& row : labels.namespaces)
    if (Status s = RunSqlite(**db, "namespace_labels", kNamespaceLabelColumns, row); !s) return s;
  return Status::Ok();
}

Status WritePostgresVersion7(const std::string& url, std::span<const LedgerHour> hours) {
  auto conn = PgConn::Open(url);
  if (!conn) return conn.status();
  if (Status s = MigratePostgresLedgerTo(**conn, 7); !s) return s;
  for (const LedgerHour& hour : hours) {
    if (Status s = RunPostgres(**conn, "device_hours", kDeviceColumns, DeviceValues(hour.device));
        !s)
      return s;
    for (const UsageRow& u : hour.usage)
      if (Status s = RunPostgres(**conn, "usage_hours", kUsageColumns, UsageValues(u)); !s)
        return s;
  }
  const LabelRows labels = LabelsOf(hours);
  for (const auto& row : labels.pods)
    if (Status s = RunPostgres(**conn, "pod_labels", kPodLabelColumns, row); !s) return s;
  for (const auto& row : labels.namespaces)
    if (Status s = RunPostgres(**conn, "namespace_labels", kNamespaceLabelColumns, row); !s)
      return s;
  return Status::Ok();
}

}  // namespace gpuledger::store::testing
