// The SQLite ledger: one file in WAL mode, schema versioned in `meta` and migrated on open.
//
// Money is INTEGER nanos and every unit is an INTEGER (GPU-µs, bytes, mJ, memory-time in KiB-s):
// there is no REAL column, and the tables are STRICT, so a REAL can never slip into one.
// Costs are not stored: reports compute them from these rows.

#include <fmt/format.h>

#include <array>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>
#include <variant>

#include "io/file_util.h"
#include "store/finding_rows.h"
#include "store/ledger_store.h"
#include "store/row_codec.h"
#include "store/sqlite_db.h"
#include "store/sqlite_schema.h"

namespace gpuledger::store {
namespace {

using LabelMap = std::map<std::string, std::string>;

class SqliteLedger final : public LedgerStore {
 public:
  explicit SqliteLedger(std::unique_ptr<SqliteDb> db) : db_(std::move(db)) {}

  Status Prepare();

  Status WriteHours(std::span<const LedgerHour> hours) override;
  Result<std::vector<DeviceHour>> ReadDeviceHours(const TimeRange& range) override;
  Result<std::vector<UsageRow>> ReadUsage(const TimeRange& range) override;
  Status Scan(const TimeRange& range, LedgerScan& scan) override;
  Result<TimeRange> Extent() override;
  Result<std::int64_t> Generation() override;
  Status PutMeta(const std::string& key, const std::string& value) override;
  Result<std::map<std::string, std::string>> ReadMeta() override;
  Status UpdateMeta(const std::map<std::string, std::optional<std::string>>& changes) override;
  Status WriteReconciliations(std::span<const Reconciliation> reconciliations) override;
  Result<std::vector<Reconciliation>> ReadReconciliations(const TimeRange& range) override;
  Status WriteFindings(std::span<const Finding> findings) override;
  Result<std::vector<Finding>> ReadFindings(const FindingQuery& query) override;

 private:
  Status CheckWritable() const;
  Status WriteHour(const LedgerHour& hour);
  Status WriteLabels(std::span<const LedgerHour> hours);
  // The pod and namespace labels of the consumers of `range`'s usage rows, row by row.
  Status ReadLabels(const TimeRange& range, LedgerScan& scan);
  Error BadRow(std::string_view table, Micros hour_us, const std::string& gpu,
               std::string_view what) const;

  std::unique_ptr<SqliteDb> db_;  // declared first: the statements below finalize before it
  SqliteStmt delete_usage_;
  SqliteStmt upsert_device_;
  SqliteStmt insert_usage_;
  SqliteStmt upsert_pod_label_;
  SqliteStmt delete_namespace_labels_;
  SqliteStmt insert_namespace_label_;
  SqliteStmt read_devices_;
  SqliteStmt read_usage_;
  SqliteStmt read_pod_labels_;
  SqliteStmt read_namespace_labels_;
  SqliteStmt extent_;
  SqliteStmt put_meta_;
  SqliteStmt read_meta_;
  SqliteStmt upsert_reconciliation_;
  SqliteStmt read_reconciliations_;
  SqliteStmt upsert_finding_;
  SqliteStmt bump_generation_;
  SqliteStmt read_generation_;
};

Status SqliteLedger::Prepare() {
  struct Spec {
    SqliteStmt* stmt;
    std::string sql;
    std::string_view what;
  };
  const std::string device_values =
      "?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20";
  const std::string usage_values =
      "?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,"
      "?25,?26,?27,?28";
  const std::array<Spec, 18> specs = {{
      {&delete_usage_, "DELETE FROM usage_hours WHERE hour_us = ?1 AND gpu_uuid = ?2",
       "delete usage_hours"},
      {&upsert_device_,
       fmt::format("INSERT OR REPLACE INTO device_hours ({}) VALUES ({})", kDeviceColumns,
                   device_values),
       "write device_hours"},
      {&insert_usage_,
       fmt::format("INSERT INTO usage_hours ({}) VALUES ({})", kUsageColumns, usage_values),
       "insert usage_hours"},
      {&upsert_pod_label_,
       "INSERT OR REPLACE INTO pod_labels (namespace, pod, pod_uid, key, value) "
       "VALUES (?1, ?2, ?3, ?4, ?5)",
       "write pod_labels"},
      {&delete_namespace_labels_, "DELETE FROM namespace_labels WHERE namespace = ?1",
       "delete namespace_labels"},
      {&insert_namespace_label_,
       "INSERT INTO namespace_labels (namespace, key, value) VALUES (?1, ?2, ?3)",
       "insert namespace_labels"},
      {&read_devices_,
       fmt::format("SELECT {} FROM device_hours WHERE hour_us >= ?1 AND hour_us < ?2 "
                   "ORDER BY hour_us, gpu_uuid",
                   kDeviceColumns),
       "read device_hours"},
      {&read_usage_,
       fmt::format("SELECT {} FROM usage_hours WHERE hour_us >= ?1 AND hour_us < ?2 "
                   "ORDER BY hour_us, gpu_uuid, namespace, pod, container, pod_uid",
                   kUsageColumns),
       "read usage_hours"},
      {&read_pod_labels_,
       "SELECT l.namespace, l.pod, l.pod_uid, l.key, l.value FROM pod_labels AS l "
       "JOIN (SELECT DISTINCT namespace, pod, pod_uid FROM usage_hours "
       "      WHERE hour_us >= ?1 AND hour_us < ?2) AS p "
       "ON l.namespace = p.namespace AND l.pod = p.pod AND l.pod_uid = p.pod_uid",
       "read pod_labels"},
      {&read_namespace_labels_,
       "SELECT namespace, key, value FROM namespace_labels WHERE namespace IN "
       "(SELECT DISTINCT namespace FROM usage_hours WHERE hour_us >= ?1 AND hour_us < ?2)",
       "read namespace_labels"},
      {&extent_, "SELECT MIN(hour_us), MAX(hour_us) FROM device_hours", "read extent"},
      {&bump_generation_,
       fmt::format("INSERT INTO meta (key, value) VALUES ('{}', '1') ON CONFLICT (key) DO "
                   "UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)",
                   kGenerationKey),
       "write ledger generation"},
      {&read_generation_, fmt::format("SELECT value FROM meta WHERE key = '{}'", kGenerationKey),
       "read ledger generation"},
      {&put_meta_, "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)", "write meta"},
      {&read_meta_, "SELECT key, value FROM meta ORDER BY key", "read meta"},
      {&upsert_reconciliation_,
       fmt::format("INSERT OR REPLACE INTO reconciliations ({}) VALUES "
                   "(?1,?2,?3,?4,?5,?6,?7,?8,?9)",
                   kReconciliationColumns),
       "write reconciliations"},
      {&read_reconciliations_,
       fmt::format("SELECT {} FROM reconciliations WHERE day_us >= ?1 AND day_us < ?2 "
                   "ORDER BY day_us, node",
                   kReconciliationColumns),
       "read reconciliations"},
      {&upsert_finding_,
       fmt::format("INSERT INTO findings ({}) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13) "
                   "ON CONFLICT ({}) DO UPDATE SET {}",
                   kFindingColumns, kFindingKeyColumns, kFindingUpdate),
       "write findings"},
  }};
  for (const Spec& spec : specs) {
    auto stmt = db_->Prepare(spec.sql, spec.what);
    if (!stmt) return stmt.status();
    *spec.stmt = std::move(*stmt);
  }
  return Status::Ok();
}

Error SqliteLedger::BadRow(std::string_view table, Micros hour_us, const std::string& gpu,
                           std::string_view what) const {
  return InvalidArgument(fmt::format("sqlite {}: {} row (hour_us {}, gpu {}): {}", db_->path(),
                                     table, hour_us, gpu, what));
}

Status SqliteLedger::CheckWritable() const {
  if (!db_->ReadOnly()) return Status::Ok();
  return IoError(fmt::format(
      "sqlite {}: cannot write: the ledger is read-only (opened read-only, or the file or its "
      "directory is not writable)",
      db_->path()));
}

Status SqliteLedger::WriteHours(std::span<const LedgerHour> hours) {
  if (hours.empty()) return Status::Ok();
  if (Status s = CheckWritable(); !s) return s;
  // Check every hour before touching the file: a malformed hour is the caller's bug and must
  // not leave a half-written span behind (the transaction would roll back anyway).
  if (auto problem = CheckHours(hours)) {
    return BadRow(problem->table, problem->hour_us, problem->gpu, problem->what);
  }

  auto txn = SqliteTxn::Begin(*db_, /*immediate=*/true);
  if (!txn) return txn.status();
  for (const LedgerHour& hour : hours) {
    if (Status s = WriteHour(hour); !s) return s;  // ~SqliteTxn rolls back
  }
  if (Status s = WriteLabels(hours); !s) return s;
  if (Status s = bump_generation_.Run(); !s) return s;
  return txn->Commit();
}

Status SqliteLedger::WriteHour(const LedgerHour& hour) {
  const DeviceHour& d = hour.device;
  delete_usage_.Bind(1, d.hour_us);
  delete_usage_.Bind(2, d.gpu.str());
  if (Status s = delete_usage_.Run(); !s) return s;

  SqliteStmt& dev = upsert_device_;
  dev.Bind(1, d.hour_us);
  dev.Bind(2, d.gpu.str());
  dev.Bind(3, d.cluster);
  dev.Bind(4, d.node);
  dev.Bind(5, d.gpu_model);
  dev.Bind(6, ToString(d.sharing));
  dev.Bind(7, StoredPricingClass(d));
  dev.Bind(8, d.price_nanos);
  dev.Bind(9, d.metered_us);
  dev.Bind(10, d.unmetered_us);
  dev.Bind(11, d.unallocated_us);
  dev.Bind(12, d.busy_us);
  dev.Bind(13, d.idle_us);
  dev.Bind(14, d.unattributed_us);
  dev.Bind(15, d.memory_total_bytes);
  dev.Bind(16, d.unattributed_memory_kib_s);
  dev.Bind(17, d.energy_mj);
  dev.Bind(18, d.idle_energy_mj);
  dev.Bind(19, d.unattributed_energy_mj);
  dev.Bind(20, d.energy_price_nanos);
  if (Status s = dev.Run(); !s) return s;

  SqliteStmt& ins = insert_usage_;
  for (const UsageRow& u : hour.usage) {
    const ConsumerRef& c = u.consumer.ref;
    ins.Bind(1, u.hour_us);
    ins.Bind(2, u.gpu.str());
    ins.Bind(3, c.namespace_name);
    ins.Bind(4, c.pod);
    ins.Bind(5, c.pod_uid.str());
    ins.Bind(6, c.container);
    ins.Bind(7, u.consumer.owner_kind);
    ins.Bind(8, u.consumer.owner_name);
    ins.Bind(9, u.node);
    ins.Bind(10, u.gpu_model);
    ins.Bind(11, ToString(u.sharing));
    ins.Bind(12, u.device_id);
    ins.Bind(13, u.allocated_us);
    ins.Bind(14, u.compute_us);
    ins.Bind(15, u.memory_kib_s);
    ins.Bind(16, u.peak_memory_bytes);
    ins.Bind(17, u.energy_mj);
    ins.Bind(18, ToString(u.compute_quality));
    ins.Bind(19, ToString(u.memory_quality));
    ins.Bind(20, u.compute_rule);
    ins.Bind(21, u.activity.sm_active_us);
    ins.Bind(22, u.activity.sm_occupancy_us);
    ins.Bind(23, u.activity.tensor_active_us);
    ins.Bind(24, u.activity.dram_active_us);
    ins.Bind(25, ToString(u.activity_quality));
    ins.Bind(26, u.activity_rule);
    ins.Bind(27, u.share_source);
    const std::string histogram = EncodeHistogram(u.histogram);  // bound, not copied: kept to Run
    ins.Bind(28, histogram);
    if (Status s = ins.Run(); !s) {
      return Error{s.error().code, fmt::format("{} (consumer {}, hour_us {}, gpu {})",
                                               s.error().message, c.Key(), u.hour_us, u.gpu.str())};
    }
  }
  return Status::Ok();
}

// Pod labels are upserted key by key; a namespace's labels are replaced as a whole. Within one
// span the last row naming a pod or namespace wins, and each is written once.
Status SqliteLedger::WriteLabels(std::span<const LedgerHour> hours) {
  using ViewKey = std::tuple<std::string_view, std::string_view, std::string_view>;
  std::map<ViewKey, const LabelMap*> pods;
  std::map<std::string_view, const LabelMap*> namespaces;
  for (const LedgerHour& hour : hours) {
    for (const UsageRow& u : hour.usage) {
      const ConsumerRef& c = u.consumer.ref;
      if (!u.consumer.labels.empty()) {
        pods[ViewKey{c.namespace_name, c.pod, c.pod_uid.str()}] = &u.consumer.labels;
      }
      namespaces[c.namespace_name] = &u.consumer.namespace_labels;
    }
  }
  for (const auto& [key, labels] : pods) {
    for (const auto& [k, v] : *labels) {
      upsert_pod_label_.Bind(1, std::get<0>(key));
      upsert_pod_label_.Bind(2, std::get<1>(key));
      upsert_pod_label_.Bind(3, std::get<2>(key));
      upsert_pod_label_.Bind(4, k);
      upsert_pod_label_.Bind(5, v);
      if (Status s = upsert_pod_label_.Run(); !s) return s;
    }
  }
  for (const auto& [ns, labels] : namespaces) {
    delete_namespace_labels_.Bind(1, ns);
    if (Status s = delete_namespace_labels_.Run(); !s) return s;
    for (const auto& [k, v] : *labels) {
      insert_namespace_label_.Bind(1, ns);
      insert_namespace_label_.Bind(2, k);
      insert_namespace_label_.Bind(3, v);
      if (Status s = insert_namespace_label_.Run(); !s) return s;
    }
  }
  return Status::Ok();
}

Result<std::vector<DeviceHour>> SqliteLedger::ReadDeviceHours(const TimeRange& range) {
  std::vector<DeviceHour> out;
  SqliteStmt& q = read_devices_;
  q.Bind(1, range.from_us);
  q.Bind(2, range.to_us);
  Status read = q.ForEachRow([&]() -> Status {
    DeviceHour d;
    if (std::string what; !DecodeDeviceHour(q, d, &what)) {
      return Internal(BadRow("device_hours", d.hour_us, d.gpu.str(), what).message);
    }
    out.push_back(std::move(d));
    return Status::Ok();
  });
  if (!read) return read;
  return out;
}

Status SqliteLedger::ReadLabels(const TimeRange& range, LedgerScan& scan) {
  {
    SqliteStmt& q = read_pod_labels_;
    q.Bind(1, range.from_us);
    q.Bind(2, range.to_us);
    Status read = q.ForEachRow(
        [&] { return scan.OnPodLabel(q.Text(0), q.Text(1), q.Text(2), q.Text(3), q.Text(4)); });
    if (!read) return read;
  }
  SqliteStmt& q = read_namespace_labels_;
  q.Bind(1, range.from_us);
  q.Bind(2, range.to_us);
  return q.ForEachRow([&] { return scan.OnNamespaceLabel(q.Text(0), q.Text(1), q.Text(2)); });
}

namespace {

// Collects a scan's labels into LabelTables (ReadUsage attaches them to its rows).
class LabelCollector final : public LedgerScan {
 public:
  LabelTables labels;
  Status OnReconciliation(const Reconciliation&) override { return Status::Ok(); }
  Status OnPodLabel(const std::string& ns, const std::string& pod, const std::string& uid,
                    const std::string& key, const std::string& value) override {
    labels.AddPod(ns, pod, uid, key, value);
    return Status::Ok();
  }
  Status OnNamespaceLabel(const std::string& ns, const std::string& key,
                          const std::string& value) override {
    labels.AddNamespace(ns, key, value);
    return Status::Ok();
  }
  Status OnDeviceHour(const DeviceHour&) override { return Status::Ok(); }
  Status OnUsage(const UsageRow&) override { return Status::Ok(); }
};

}  // namespace

Result<std::vector<UsageRow>> SqliteLedger::ReadUsage(const TimeRange& range) {
  // One read transaction: rows and labels come from the same snapshot.
  auto txn = SqliteTxn::Begin(*db_, /*immediate=*/false);
  if (!txn) return txn.status();
  LabelCollector collected;
  if (Status s = ReadLabels(range, collected); !s) return s;

  std::vector<UsageRow> out;
  SqliteStmt& q = read_usage_;
  q.Bind(1, range.from_us);
  q.Bind(2, range.to_us);
  Status read = q.ForEachRow([&]() -> Status {
    UsageRow u;
    if (std::string what; !DecodeUsageRow(q, u, &what)) {
      return Internal(BadRow("usage_hours", u.hour_us, u.gpu.str(), what).message);
    }
    collected.labels.Attach(u);
    out.push_back(std::move(u));
    return Status::Ok();
  });
  if (!read) return read;
  if (Status s = txn->Commit(); !s) return s;
  return out;
}

Status SqliteLedger::Scan(const TimeRange& range, LedgerScan& scan) {
  auto txn = SqliteTxn::Begin(*db_, /*immediate=*/false);
  if (!txn) return txn.status();
  {
    SqliteStmt& q = read_reconciliations_;
    q.Bind(1, range.from_us);
    q.Bind(2, range.to_us);
    Status read = q.ForEachRow([&] { return scan.OnReconciliation(DecodeReconciliation(q)); });
    if (!read) return read;
  }
  if (Status s = ReadLabels(range, scan); !s) return s;
  {
    SqliteStmt& q = read_devices_;
    q.Bind(1, range.from_us);
    q.Bind(2, range.to_us);
    DeviceHour d;  // reused: its strings keep their capacity from row to row
    Status read = q.ForEachRow([&]() -> Status {
      if (std::string what; !DecodeDeviceHour(q, d, &what))
        return Internal(BadRow("device_hours", d.hour_us, d.gpu.str(), what).message);
      return scan.OnDeviceHour(d);
    });
    if (!read) return read;
  }
  SqliteStmt& q = read_usage_;
  q.Bind(1, range.from_us);
  q.Bind(2, range.to_us);
  UsageRow u;
  Status read = q.ForEachRow([&]() -> Status {
    if (std::string what; !DecodeUsageRow(q, u, &what))
      return Internal(BadRow("usage_hours", u.hour_us, u.gpu.str(), what).message);
    return scan.OnUsage(u);
  });
  if (!read) return read;
  return txn->Commit();
}

Result<TimeRange> SqliteLedger::Extent() {
  auto row = extent_.Step();
  if (!row) return row.error();
  TimeRange extent{0, 0};
  if (*row && !extent_.IsNull(0)) {
    extent.from_us = extent_.Int(0);
    extent.to_us = extent_.Int(1) + kMicrosPerHour;
  }
  extent_.Reset();
  return extent;
}

Result<std::int64_t> SqliteLedger::Generation() {
  std::int64_t generation = 0;
  Status read = read_generation_.ForEachRow([&] {
    generation = std::stoll(read_generation_.Text(0));
    return Status::Ok();
  });
  if (!read) return read.error();
  return generation;
}

Status SqliteLedger::PutMeta(const std::string& key, const std::string& value) {
  if (IsStoreOwnedMetaKey(key)) {
    return InvalidArgument(
        fmt::format("sqlite {}: meta key '{}' is owned by the store", db_->path(), key));
  }
  if (Status s = CheckWritable(); !s) return s;
  put_meta_.Bind(1, key);
  put_meta_.Bind(2, value);
  return put_meta_.Run();
}

Status SqliteLedger::UpdateMeta(const std::map<std::string, std::optional<std::string>>& changes) {
  if (changes.empty()) return Status::Ok();
  for (const auto& [key, value] : changes)
    if (IsStoreOwnedMetaKey(key))
      return InvalidArgument(
          fmt::format("sqlite {}: meta key '{}' is owned by the store", db_->path(), key));
  if (Status s = CheckWritable(); !s) return s;
  auto erase = db_->Prepare("DELETE FROM meta WHERE key = ?1", "delete meta");
  if (!erase) return erase.status();
  auto txn = SqliteTxn::Begin(*db_, /*immediate=*/true);
  if (!txn) return txn.status();
  for (const auto& [key, value] : changes) {
    SqliteStmt& stmt = value ? put_meta_ : *erase;
    stmt.Bind(1, key);
    if (value) stmt.Bind(2, *value);
    if (Status s = stmt.Run(); !s) return s;  // ~SqliteTxn rolls back
  }
  return txn->Commit();
}

Result<std::map<std::string, std::string>> SqliteLedger::ReadMeta() {
  std::map<std::string, std::string> out;
  Status read = read_meta_.ForEachRow([&] {
    out.emplace(read_meta_.Text(0), read_meta_.Text(1));
    return Status::Ok();
  });
  if (!read) return read;
  return out;
}

Status SqliteLedger::WriteReconciliations(std::span<const Reconciliation> reconciliations) {
  if (reconciliations.empty()) return Status::Ok();
  if (Status s = CheckWritable(); !s) return s;
  for (const Reconciliation& r : reconciliations) {
    if (r.node.empty() || DayStart(r.day_us) != r.day_us) {
      return InvalidArgument(fmt::format(
          "sqlite {}: reconciliations row (node '{}', day_us {}): empty node or not a day start",
          db_->path(), r.node, r.day_us));
    }
  }
  auto txn = SqliteTxn::Begin(*db_, /*immediate=*/true);
  if (!txn) return txn.status();
  SqliteStmt& q = upsert_reconciliation_;
  for (const Reconciliation& r : reconciliations) {
    q.Bind(1, r.node);
    q.Bind(2, r.day_us);
    q.Bind(3, r.modelled_nanos);
    q.Bind(4, r.billed_nanos);
    q.Bind(5, r.factor);
    q.Bind(6, r.factor_ppm);
    q.Bind(7, r.currency);
    q.Bind(8, r.bill_file);
    q.Bind(9, r.imported_at_us);
    if (Status s = q.Run(); !s) return s;  // ~SqliteTxn rolls back
  }
  if (Status s = bump_generation_.Run(); !s) return s;
  return txn->Commit();
}

Result<std::vector<Reconciliation>> SqliteLedger::ReadReconciliations(const TimeRange& range) {
  std::vector<Reconciliation> out;
  SqliteStmt& q = read_reconciliations_;
  q.Bind(1, range.from_us);
  q.Bind(2, range.to_us);
  Status read = q.ForEachRow([&] {
    out.push_back(DecodeReconciliation(q));
    return Status::Ok();
  });
  if (!read) return read;
  return out;
}

Status SqliteLedger::WriteFindings(std::span<const Finding> findings) {
  if (findings.empty()) return Status::Ok();
  if (Status s = CheckWritable(); !s) return s;
  if (Status s = CheckFindings(findings, "sqlite " + db_->path()); !s) return s;
  auto txn = SqliteTxn::Begin(*db_, /*immediate=*/true);
  if (!txn) return txn.status();
  SqliteStmt& q = upsert_finding_;
  // One after the other: a later finding of the span with the same key replaces an earlier.
  for (const Finding& f : findings) {
    const std::string_view kind = ToString(f.kind);
    const std::string_view severity = ToString(f.severity);
    q.Bind(1, f.cluster);
    q.Bind(2, f.node);
    q.Bind(3, kind);
    q.Bind(4, f.subject.namespace_name);
    q.Bind(5, f.subject.pod);
    q.Bind(6, f.subject.pod_uid.str());
    q.Bind(7, f.subject.container);
    q.Bind(8, f.gpu_uuid);
    q.Bind(9, f.first_seen_us);
    q.Bind(10, severity);
    q.Bind(11, f.evidence);
    q.Bind(12, f.last_seen_us);
    if (f.resolved_us) {
      q.Bind(13, *f.resolved_us);
    } else {
      q.BindNull(13);
    }
    if (Status s = q.Run(); !s) {  // ~SqliteTxn rolls back
      return Error{s.error().code,
                   fmt::format("{} ({} of {} on node '{}', first_seen_us {})", s.error().message,
                               kind, f.subject.Key(), f.node, f.first_seen_us)};
    }
  }
  return txn->Commit();
}

Result<std::vector<Finding>> SqliteLedger::ReadFindings(const FindingQuery& query) {
  const FindingFilter filter = MakeFindingFilter(query, '?');
  auto q = db_->Prepare(fmt::format("SELECT {} FROM findings{}", kFindingColumns, filter.where),
                        "read findings");
  if (!q) return q.error();
  for (std::size_t i = 0; i < filter.args.size(); ++i) {
    const int index = static_cast<int>(i) + 1;
    if (const auto* n = std::get_if<std::int64_t>(&filter.args[i])) {
      q->Bind(index, *n);
    } else {
      q->Bind(index, std::string_view(std::get<std::string>(filter.args[i])));
    }
  }
  std::vector<Finding> out;
  Status read = q->ForEachRow([&]() -> Status {
    Finding f;
    if (std::string what; !DecodeFindingRow(*q, q->IsNull(12), f, &what)) {
      return Internal(fmt::format("sqlite {}: findings row: {}", db_->path(), what));
    }
    if (KeepFinding(f, query)) out.push_back(std::move(f));
    return Status::Ok();
  });
  if (!read) return read;
  SortFindings(out);
  return out;
}

}  // namespace

Result<std::unique_ptr<LedgerStore>> OpenSqliteLedger(const std::string& path) {
  return OpenSqliteLedger(path, SqliteLedgerOptions{});
}

Result<std::unique_ptr<LedgerStore>> OpenSqliteLedger(const std::string& path,
                                                      const SqliteLedgerOptions& options) {
  int flags =
      options.read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  // A WAL-mode ledger is read through a -shm file beside it, which a read-only file system
  // cannot hold (issue 29: a ledger on a read-only mount could not even be read). Its content
  // is all in the main file once the log is folded in (no -wal file, or an empty one): then it
  // is read as immutable. Otherwise the last writes are only in the log, and are not dropped
  // silently.
  bool immutable = false;
  if (options.read_only && OnReadOnlyFileSystem(path)) {
    std::error_code ec;
    const auto wal_bytes = std::filesystem::file_size(path + "-wal", ec);
    if (!ec && wal_bytes > 0)
      return IoError(fmt::format(
          "sqlite {}: on a read-only file system, with writes still in its log {}-wal ({} "
          "bytes) that only a writable copy can read; open it once where it can be written "
          "(closing the last connection folds the log in), or copy the directory",
          path, path, wal_bytes));
    immutable = true;
  }
  auto db = SqliteDb::Open(path, flags | SQLITE_OPEN_NOMUTEX, immutable);
  if (!db) return db.error();
  if (Status s = ConfigureSqliteLedger(**db, options); !s) return s;
  if (Status s = MigrateSqliteLedger(**db, options.read_only); !s) return s;
  auto ledger = std::make_unique<SqliteLedger>(std::move(*db));
  if (Status s = ledger->Prepare(); !s) return s;
  return std::unique_ptr<LedgerStore>(std::move(ledger));
}

}  // namespace gpuledger::store
