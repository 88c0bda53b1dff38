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
#include "store/compact_hours.h"
#include "store/finding_rows.h"
#include "store/ledger_store.h"
#include "store/row_codec.h"
#include "store/sqlite_db.h"
#include "store/sqlite_hours.h"
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
  Status WriteLabels(std::span<const LedgerHour> hours);
  Error BadRow(std::string_view table, Micros hour_us, const std::string& gpu,
               std::string_view what) const;
  std::string ErrorsName() const { return "sqlite " + db_->path(); }

  std::unique_ptr<SqliteDb> db_;  // declared first: the statements below finalize before it
  std::unique_ptr<SqliteHourTables> hours_;
  DimensionCache dimensions_;
  SqliteStmt upsert_pod_label_;
  SqliteStmt delete_namespace_labels_;
  SqliteStmt insert_namespace_label_;
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
  auto hours = SqliteHourTables::Prepare(*db_);
  if (!hours) return hours.status();
  hours_ = std::move(*hours);
  const std::array<Spec, 11> specs = {{
      {&upsert_pod_label_,
       "INSERT OR REPLACE INTO pod_labels (namespace, pod, pod_uid, key, value) "
       "VALUES (?1, ?2, ?3, ?4, ?5)",
       "write pod_labels"},
      {&delete_namespace_labels_, "DELETE FROM namespace_labels WHERE namespace = ?1",
       "delete namespace_labels"},
      {&insert_namespace_label_,
       "INSERT INTO namespace_labels (namespace, key, value) VALUES (?1, ?2, ?3)",
       "insert namespace_labels"},
      {&extent_, "SELECT MIN(hour), MAX(hour) FROM hours", "read extent"},
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
  Status written = WriteCompactHours(*hours_, dimensions_, hours);
  if (written) written = WriteLabels(hours);
  if (written) written = bump_generation_.Run();
  if (written) written = txn->Commit();
  // Ids learned in a transaction that did not commit may not exist.
  if (!written) dimensions_.Clear();  // ~SqliteTxn rolls back
  return written;
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
  auto txn = SqliteTxn::Begin(*db_, /*immediate=*/false);
  if (!txn) return txn.status();
  auto out = ReadCompactDeviceHours(*hours_, dimensions_, range, ErrorsName());
  if (!out) return out;
  if (Status s = txn->Commit(); !s) return s;
  return out;
}

Result<std::vector<UsageRow>> SqliteLedger::ReadUsage(const TimeRange& range) {
  // One read transaction: rows and labels come from the same snapshot.
  auto txn = SqliteTxn::Begin(*db_, /*immediate=*/false);
  if (!txn) return txn.status();
  auto out = ReadCompactUsage(*hours_, dimensions_, range, ErrorsName());
  if (!out) return out;
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
  if (Status s = ScanCompactHours(*hours_, dimensions_, range, scan, ErrorsName()); !s) return s;
  return txn->Commit();
}

Result<TimeRange> SqliteLedger::Extent() {
  auto row = extent_.Step();
  if (!row) return row.error();
  TimeRange extent{0, 0};
  if (*row && !extent_.IsNull(0)) {
    extent.from_us = extent_.Int(0) * kMicrosPerHour;
    extent.to_us = (extent_.Int(1) + 1) * kMicrosPerHour;
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
