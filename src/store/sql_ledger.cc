// The ledger store, written once: hours as compact records (store/compact_hours.h; their
// consumers carry the labels in force), meta, reconciliations and findings as plain tables, all
// through a SqlConnection.
//
// Money is integer nanos and every unit an integer (GPU-µs, bytes, mJ, memory-time in KiB-s);
// costs are not stored: reports compute them from these rows. Text compares as bytes in both
// databases (SQLite's BINARY, PostgreSQL's COLLATE "C"), so keys and ORDER BY agree.

#include "store/sql_ledger.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <variant>

#include "store/compact_hours.h"
#include "store/finding_rows.h"
#include "store/row_codec.h"
#include "store/sqlite_schema.h"
#include "store/token_rows.h"

namespace gpuledger::store {
namespace {

// The hours a write of `hours` touches (labels are part of the rows: schema 11).
TimeRange HoursTouched(std::span<const LedgerHour> hours) {
  const auto [first, last] = std::minmax_element(
      hours.begin(), hours.end(),
      [](const LedgerHour& a, const LedgerHour& b) { return a.device.hour_us < b.device.hour_us; });
  return {first->device.hour_us, last->device.hour_us + kMicrosPerHour};
}

constexpr std::array<SqlColumn, 2> kMetaColumns = {{
    {"key", SqlType::kText},
    {"value", SqlType::kText},
}};
constexpr SqlUpsert kMetaUpsert = {"meta", kMetaColumns, 1, false};

// kReconciliationColumns with the key first.
constexpr std::array<SqlColumn, 9> kReconciliationUpsertColumns = {{
    {"day_us", SqlType::kInt},
    {"node", SqlType::kText},
    {"modelled_nanos", SqlType::kInt},
    {"billed_nanos", SqlType::kInt},
    {"factor", SqlType::kText},
    {"factor_ppm", SqlType::kInt},
    {"currency", SqlType::kText},
    {"bill_file", SqlType::kText},
    {"imported_at_us", SqlType::kInt},
}};
constexpr SqlUpsert kReconciliationUpsert = {"reconciliations", kReconciliationUpsertColumns, 2,
                                             false};

// The findings' primary key (Finding::Key()), then what an upsert replaces.
constexpr std::array<SqlColumn, 13> kFindingUpsertColumns = {{
    {"first_seen_us", SqlType::kInt},
    {"node", SqlType::kText},
    {"kind", SqlType::kText},
    {"namespace", SqlType::kText},
    {"pod", SqlType::kText},
    {"pod_uid", SqlType::kText},
    {"container", SqlType::kText},
    {"gpu_uuid", SqlType::kText},
    {"cluster", SqlType::kText},
    {"severity", SqlType::kText},
    {"evidence", SqlType::kText},
    {"last_seen_us", SqlType::kInt},
    {"resolved_us", SqlType::kInt},
}};
constexpr SqlUpsert kFindingUpsert = {"findings", kFindingUpsertColumns, 9, false};

class SqlLedger final : public LedgerStore {
 public:
  explicit SqlLedger(std::unique_ptr<SqlConnection> db) : db_(std::move(db)) {}

  Status WriteHours(std::span<const LedgerHour> hours) override;
  Result<std::vector<DeviceHour>> ReadDeviceHours(const TimeRange& range) override;
  Result<std::vector<UsageRow>> ReadUsage(const TimeRange& range) override;
  Status Scan(const TimeRange& range, LedgerScan& scan) override;
  Result<TimeRange> Extent() override;
  Result<std::int64_t> Generation() override;
  Result<std::optional<LedgerChanges>> ChangesSince(std::int64_t generation) override;
  Status PutMeta(const std::string& key, const std::string& value) override;
  Result<std::map<std::string, std::string>> ReadMeta() override;
  Status UpdateMeta(const std::map<std::string, std::optional<std::string>>& changes) override;
  Status WriteReconciliations(std::span<const Reconciliation> reconciliations) override;
  Result<std::vector<Reconciliation>> ReadReconciliations(const TimeRange& range) override;
  Status WriteFindings(std::span<const Finding> findings) override;
  Result<std::vector<Finding>> ReadFindings(const FindingQuery& query) override;
  Status WriteTokenHours(std::span<const TokenHour> rows) override;
  Result<std::vector<TokenHour>> ReadTokenHours(const TimeRange& range) override;
  Result<int> WriteStatement(const Statement& statement) override;
  Result<std::vector<Statement>> ReadStatements(const std::string& period) override;
  Result<std::string> ReadStatementBody(const Statement& heading) override;
  Result<std::optional<std::string>> ReadDayRollup(Micros day_us, std::string_view kind) override;
  Result<std::vector<Micros>> KeptDays(std::string_view kind, const TimeRange& range) override;
  Result<bool> WriteDayRollup(Micros day_us, std::string_view kind, std::int64_t generation,
                              std::string_view body) override;

 private:
  // Counts one more change of what reports read, and logs the hours it touched (inside the
  // writer's transaction).
  Status BumpGeneration(const TimeRange& touched);
  Status CheckMetaKeys(const std::map<std::string, std::optional<std::string>>& changes) const;
  // A write transaction on a ledger still at this build's schema: another build may have
  // migrated it since this one opened it (several clusters' servers write one ledger), and
  // rows of this build's layout must not go into a newer one. kUnsupported, saying both
  // versions, when it has moved on; the ledger then keeps what it holds and gets nothing more.
  Result<std::unique_ptr<SqlTxn>> BeginWrite();
  Status ForEachReconciliation(const TimeRange& range,
                               const std::function<Status(const Reconciliation&)>& on_row);
  // Runs `read` in a read snapshot.
  template <typename T>
  Result<T> InSnapshot(const std::function<Result<T>()>& read);

  std::unique_ptr<SqlConnection> db_;
  DimensionCache dimensions_;
};

Result<std::unique_ptr<SqlTxn>> SqlLedger::BeginWrite() {
  auto txn = db_->Begin(/*write=*/true);
  if (!txn) return txn;
  auto version = db_->FirstInt(
      "read schema_version",
      fmt::format("SELECT CAST(value AS INTEGER) FROM meta WHERE key = '{}'", kSchemaVersionKey),
      {});
  if (!version) return version.error();
  if (*version == kSchemaVersion) return txn;
  return Unsupported(fmt::format(
      "{}: the ledger's schema is version {} now, this build writes version {}: it writes "
      "nothing more to it (another build migrated it; run this server at that build)",
      db_->name(), version->value_or(0), kSchemaVersion));
}

template <typename T>
Result<T> SqlLedger::InSnapshot(const std::function<Result<T>()>& read) {
  auto txn = db_->Begin(/*write=*/false);
  if (!txn) return txn.status();
  auto out = read();
  if (!out) return out;
  if (Status s = (*txn)->Commit(); !s) return s;
  return out;
}

Status SqlLedger::WriteHours(std::span<const LedgerHour> hours) {
  if (hours.empty()) return Status::Ok();
  if (Status s = db_->CheckWritable(); !s) return s;
  // Check every hour before touching the ledger: a malformed hour is the caller's bug and must
  // not leave a half-written span behind (the transaction would roll back anyway).
  if (auto problem = CheckHours(hours)) {
    return InvalidArgument(fmt::format("{}: {} row (hour_us {}, gpu {}): {}", db_->name(),
                                       problem->table, problem->hour_us, problem->gpu,
                                       problem->what));
  }
  auto txn = BeginWrite();
  if (!txn) return txn.status();
  Status written = WriteCompactHours(*db_, dimensions_, hours);
  if (written) written = BumpGeneration(HoursTouched(hours));
  if (written) written = (*txn)->Commit();
  // Ids learned in a transaction that did not commit may not exist.
  if (!written) dimensions_.Clear();  // the transaction rolls back
  return written;
}

Result<std::vector<DeviceHour>> SqlLedger::ReadDeviceHours(const TimeRange& range) {
  return InSnapshot<std::vector<DeviceHour>>(
      [&] { return ReadCompactDeviceHours(*db_, dimensions_, range); });
}

Result<std::vector<UsageRow>> SqlLedger::ReadUsage(const TimeRange& range) {
  return InSnapshot<std::vector<UsageRow>>(
      [&] { return ReadCompactUsage(*db_, dimensions_, range); });
}

Status SqlLedger::Scan(const TimeRange& range, LedgerScan& scan) {
  auto txn = db_->Begin(/*write=*/false);
  if (!txn) return txn.status();
  Status read = ForEachReconciliation(
      range, [&](const Reconciliation& r) { return scan.OnReconciliation(r); });
  if (!read) return read;
  read = ScanCompactHours(*db_, dimensions_, range, scan);
  if (!read) return read;
  return (*txn)->Commit();
}

Result<TimeRange> SqlLedger::Extent() {
  TimeRange extent{0, 0};
  // Two subqueries: each is one step of the key's index, where MIN and MAX in one query make
  // SQLite scan the whole table (0.1 s at 1,008 GPUs x 30 days, every time the ledger moves).
  Status read = db_->ForEachRow(
      "read extent", "SELECT (SELECT MIN(hour) FROM hours), (SELECT MAX(hour) FROM hours)", {},
      [&](SqlRow& row) {
        if (row.IsNull(0)) return Status::Ok();
        extent.from_us = row.Int(0) * kMicrosPerHour;
        extent.to_us = (row.Int(1) + 1) * kMicrosPerHour;
        return row.Check("hours");
      });
  if (!read) return read;
  return extent;
}

Status SqlLedger::BumpGeneration(const TimeRange& touched) {
  const std::array<SqlValue, 1> key = {kGenerationKey};
  Status s = db_->Run("write ledger generation",
                      "INSERT INTO meta (key, value) VALUES (?1, '1') ON CONFLICT (key) DO UPDATE "
                      "SET value = CAST(CAST(meta.value AS BIGINT) + 1 AS TEXT)",
                      key);
  const std::array<SqlValue, 3> change = {kGenerationKey, touched.from_us, touched.to_us};
  if (s) {
    s = db_->Run("log ledger change",
                 "INSERT INTO ledger_changes (generation, from_us, to_us) "
                 "SELECT CAST(value AS BIGINT), ?2, ?3 FROM meta WHERE key = ?1",
                 change);
  }
  // The days kept summed that the write reaches are no longer the days as they stand.
  const std::array<SqlValue, 2> days = {touched.to_us, touched.from_us - kMicrosPerDay};
  if (s) {
    s = db_->Run("drop the days kept summed that the write touched",
                 "DELETE FROM day_rollups WHERE day_us < ?1 AND day_us > ?2", days);
  }
  const std::array<SqlValue, 2> trim = {kGenerationKey, LedgerStore::kChangeLogLength};
  if (s) {
    s = db_->Run("trim ledger change log",
                 "DELETE FROM ledger_changes WHERE generation <= "
                 "(SELECT CAST(value AS BIGINT) FROM meta WHERE key = ?1) - ?2",
                 trim);
  }
  return s;
}

Result<std::optional<LedgerChanges>> SqlLedger::ChangesSince(std::int64_t generation) {
  return InSnapshot<std::optional<LedgerChanges>>([&]() -> Result<std::optional<LedgerChanges>> {
    auto now = Generation();
    if (!now) return now.error();
    auto extent = Extent();
    if (!extent) return extent.error();
    LedgerChanges changes;
    changes.generation = *now;
    changes.extent = *extent;
    using Answer = std::optional<LedgerChanges>;
    if (generation == *now) return Answer(changes);
    if (generation > *now || generation < 0) return Answer();
    const std::array<SqlValue, 1> after = {generation};
    std::int64_t logged = 0;
    Status read = db_->ForEachRow(
        "read ledger changes",
        "SELECT COUNT(*), MIN(from_us), MAX(to_us) FROM ledger_changes WHERE generation > ?1",
        after, [&](SqlRow& row) {
          logged = row.Int(0);
          if (logged > 0) changes.touched = {row.Int(1), row.Int(2)};
          return row.Check("ledger_changes");
        });
    if (!read) return read.error();
    // Writes the log never saw (trimmed, or made before it existed): the store cannot say.
    if (logged != *now - generation) return Answer();
    return Answer(changes);
  });
}

Result<std::int64_t> SqlLedger::Generation() {
  const std::array<SqlValue, 1> args = {kGenerationKey};
  std::int64_t generation = 0;
  Status read = db_->ForEachRow(
      "read ledger generation", "SELECT value FROM meta WHERE key = ?1", args,
      [&](SqlRow& row) -> Status {
        const std::string text = row.Text(0);
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), generation);
        if (ec != std::errc() || end != text.data() + text.size()) {
          return Internal(fmt::format("{}: meta key '{}' is '{}', not a whole number", db_->name(),
                                      kGenerationKey, text));
        }
        return Status::Ok();
      });
  if (!read) return read;
  return generation;
}

Status SqlLedger::CheckMetaKeys(
    const std::map<std::string, std::optional<std::string>>& changes) const {
  for (const auto& [key, value] : changes) {
    if (IsStoreOwnedMetaKey(key)) {
      return InvalidArgument(
          fmt::format("{}: meta key '{}' is owned by the store", db_->name(), key));
    }
  }
  return db_->CheckWritable();
}

Status SqlLedger::PutMeta(const std::string& key, const std::string& value) {
  return UpdateMeta({{key, value}});
}

Status SqlLedger::UpdateMeta(const std::map<std::string, std::optional<std::string>>& changes) {
  if (changes.empty()) return Status::Ok();
  if (Status s = CheckMetaKeys(changes); !s) return s;
  std::vector<SqlValue> erased;
  std::vector<SqlValue> set;
  for (const auto& [key, value] : changes) {
    if (value) {
      set.insert(set.end(), {std::string_view(key), std::string_view(*value)});
    } else {
      erased.emplace_back(std::string_view(key));
    }
  }
  auto txn = BeginWrite();
  if (!txn) return txn.status();
  if (!erased.empty()) {
    Status s = db_->Delete("delete meta", "meta", std::span(kMetaColumns).first(1), erased);
    if (!s) return s;  // the transaction rolls back
  }
  if (!set.empty()) {
    if (Status s = db_->Upsert("write meta", kMetaUpsert, set); !s) return s;
  }
  return (*txn)->Commit();
}

Result<std::map<std::string, std::string>> SqlLedger::ReadMeta() {
  std::map<std::string, std::string> out;
  Status read = db_->ForEachRow("read meta", "SELECT key, value FROM meta", {}, [&](SqlRow& row) {
    out.emplace(row.Text(0), row.Text(1));
    return Status::Ok();
  });
  if (!read) return read;
  return out;
}

Status SqlLedger::WriteReconciliations(std::span<const Reconciliation> reconciliations) {
  if (reconciliations.empty()) return Status::Ok();
  if (Status s = db_->CheckWritable(); !s) return s;
  // A later reconciliation of the span replaces an earlier one of its (day, node).
  std::map<std::pair<Micros, std::string_view>, const Reconciliation*> last;
  for (const Reconciliation& r : reconciliations) {
    if (r.node.empty() || DayStart(r.day_us) != r.day_us) {
      return InvalidArgument(fmt::format(
          "{}: reconciliations row (node '{}', day_us {}): empty node or not a day start",
          db_->name(), r.node, r.day_us));
    }
    last[{r.day_us, r.node}] = &r;
  }
  std::vector<SqlValue> cells;
  cells.reserve(last.size() * kReconciliationUpsertColumns.size());
  for (const auto& [key, r] : last) {
    cells.insert(cells.end(),
                 {r->day_us, std::string_view(r->node), r->modelled_nanos, r->billed_nanos,
                  std::string_view(r->factor), r->factor_ppm, std::string_view(r->currency),
                  std::string_view(r->bill_file), r->imported_at_us});
  }
  auto txn = BeginWrite();
  if (!txn) return txn.status();
  Status written = db_->Upsert("write reconciliations", kReconciliationUpsert, cells);
  // Keys are ordered by day: the first and the last bound the node-days repriced.
  if (written)
    written =
        BumpGeneration({last.begin()->first.first, last.rbegin()->first.first + kMicrosPerDay});
  if (written) written = (*txn)->Commit();
  return written;
}

Status SqlLedger::ForEachReconciliation(
    const TimeRange& range, const std::function<Status(const Reconciliation&)>& on_row) {
  const std::array<SqlValue, 2> args = {range.from_us, range.to_us};
  return db_->ForEachRow(
      "read reconciliations",
      fmt::format("SELECT {} FROM reconciliations WHERE day_us >= ?1 AND day_us < ?2 "
                  "ORDER BY day_us, node",
                  kReconciliationColumns),
      args, [&](SqlRow& row) {
        const Reconciliation r = DecodeReconciliation(row);
        if (Status s = row.Check("reconciliations"); !s) return s;
        return on_row(r);
      });
}

Result<std::vector<Reconciliation>> SqlLedger::ReadReconciliations(const TimeRange& range) {
  std::vector<Reconciliation> out;
  Status read = ForEachReconciliation(range, [&](const Reconciliation& r) {
    out.push_back(r);
    return Status::Ok();
  });
  if (!read) return read;
  return out;
}

Status SqlLedger::WriteFindings(std::span<const Finding> findings) {
  if (findings.empty()) return Status::Ok();
  if (Status s = db_->CheckWritable(); !s) return s;
  if (Status s = CheckFindings(findings, db_->name()); !s) return s;
  // As if written one after the other: the span's last finding of each key is the one kept.
  const std::vector<const Finding*> kept = LastOfEachKey(findings);
  std::vector<SqlValue> cells;
  cells.reserve(kept.size() * kFindingUpsertColumns.size());
  for (const Finding* f : kept) {
    cells.insert(cells.end(),
                 {f->first_seen_us, std::string_view(f->node), ToString(f->kind),
                  std::string_view(f->subject.namespace_name), std::string_view(f->subject.pod),
                  f->subject.pod_uid.str(), std::string_view(f->subject.container),
                  std::string_view(f->gpu_uuid), std::string_view(f->cluster),
                  ToString(f->severity), std::string_view(f->evidence), f->last_seen_us,
                  f->resolved_us ? SqlValue(*f->resolved_us) : SqlValue()});
  }
  auto txn = BeginWrite();
  if (!txn) return txn.status();
  if (Status s = db_->Upsert("write findings", kFindingUpsert, cells); !s) return s;
  return (*txn)->Commit();
}

Result<std::vector<Finding>> SqlLedger::ReadFindings(const FindingQuery& query) {
  const FindingFilter filter = MakeFindingFilter(query);
  std::vector<Finding> out;
  Status read = db_->ForEachRow(
      "read findings", fmt::format("SELECT {} FROM findings{}", kFindingColumns, filter.where),
      filter.args, [&](SqlRow& row) -> Status {
        Finding f;
        std::string what;
        const bool decoded = DecodeFindingRow(row, row.IsNull(12), f, &what);
        if (Status s = row.Check("findings"); !s) return s;
        if (!decoded) return Internal(fmt::format("{}: findings row: {}", db_->name(), what));
        if (KeepFinding(f, query)) out.push_back(std::move(f));
        return Status::Ok();
      });
  if (!read) return read;
  SortFindings(out);
  return out;
}

Status SqlLedger::WriteTokenHours(std::span<const TokenHour> rows) {
  if (rows.empty()) return Status::Ok();
  if (Status s = db_->CheckWritable(); !s) return s;
  if (Status s = CheckTokenHours(rows, db_->name()); !s) return s;
  const std::vector<SqlValue> cells = TokenHourCells(rows);
  auto txn = BeginWrite();
  if (!txn) return txn.status();
  if (Status s = db_->Upsert("write token hours", kTokenHourUpsert, cells); !s) return s;
  return (*txn)->Commit();
}

Result<std::vector<TokenHour>> SqlLedger::ReadTokenHours(const TimeRange& range) {
  std::vector<TokenHour> out;
  const std::array<SqlValue, 2> args = {range.from_us, range.to_us};
  Status read = db_->ForEachRow(
      "read token hours",
      fmt::format("SELECT {} FROM token_hours WHERE hour_us >= ?1 AND hour_us < ?2 ORDER BY "
                  "hour_us, cluster, namespace, pod, pod_uid, container, model, engine",
                  kTokenHourColumns),
      args, [&](SqlRow& row) -> Status {
        out.push_back(DecodeTokenHour(row));
        return row.Check("token_hours");
      });
  if (!read) return read;
  return out;
}

Result<int> SqlLedger::WriteStatement(const Statement& st) {
  if (Status s = db_->CheckWritable(); !s) return s;
  auto txn = BeginWrite();
  if (!txn) return txn.status();
  const std::array<SqlValue, 3> key = {std::string_view(st.period), std::string_view(st.policy),
                                       std::string_view(st.idle)};
  auto last = db_->FirstInt("read statement versions",
                            "SELECT COALESCE(MAX(version), 0) FROM statements WHERE period = ?1 "
                            "AND policy = ?2 AND idle = ?3",
                            key);
  if (!last) return last.status();
  const int version = static_cast<int>(last->value_or(0)) + 1;
  const std::array<SqlValue, 11> row = {std::string_view(st.period),
                                        std::string_view(st.policy),
                                        std::string_view(st.idle),
                                        std::int64_t{version},
                                        st.from_us,
                                        st.to_us,
                                        st.closed_at_us,
                                        std::string_view(st.build),
                                        std::string_view(st.provenance),
                                        st.total_cost_nanos,
                                        SqlBytes{st.body}};
  if (Status s = db_->Run("write statement",
                          "INSERT INTO statements (period, policy, idle, version, from_us, to_us, "
                          "closed_at_us, build, provenance, total_cost_nanos, body) VALUES (?1, "
                          "?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                          row);
      !s)
    return s;
  if (Status s = (*txn)->Commit(); !s) return s;
  return version;
}

Result<std::vector<Statement>> SqlLedger::ReadStatements(const std::string& period) {
  std::vector<Statement> out;
  const std::array<SqlValue, 1> args = {std::string_view(period)};
  Status read = db_->ForEachRow(
      "read statements",
      "SELECT period, policy, idle, version, from_us, to_us, closed_at_us, build, provenance, "
      "total_cost_nanos FROM statements WHERE ?1 = '' OR period = ?1 "
      "ORDER BY period, policy, idle, version",
      args, [&](SqlRow& row) -> Status {
        Statement& st = out.emplace_back();
        st.period = row.Text(0);
        st.policy = row.Text(1);
        st.idle = row.Text(2);
        st.version = static_cast<int>(row.Int(3));
        st.from_us = row.Int(4);
        st.to_us = row.Int(5);
        st.closed_at_us = row.Int(6);
        st.build = row.Text(7);
        st.provenance = row.Text(8);
        st.total_cost_nanos = row.Int(9);
        return row.Check("statements");
      });
  if (!read) return read;
  return out;
}

Result<std::string> SqlLedger::ReadStatementBody(const Statement& heading) {
  std::optional<std::string> body;
  const std::array<SqlValue, 4> key = {
      std::string_view(heading.period), std::string_view(heading.policy),
      std::string_view(heading.idle), std::int64_t{heading.version}};
  Status read = db_->ForEachRow("read statement",
                                "SELECT body FROM statements WHERE period = ?1 AND policy = ?2 "
                                "AND idle = ?3 AND version = ?4",
                                key, [&](SqlRow& row) -> Status {
                                  body = std::string(row.Bytes(0));
                                  return row.Check("statements");
                                });
  if (!read) return read;
  if (!body)
    return Internal(fmt::format("{}: no statement {} version {} ({}, {})", db_->name(),
                                heading.period, heading.version, heading.policy, heading.idle));
  return std::move(*body);
}

Result<std::optional<std::string>> SqlLedger::ReadDayRollup(Micros day_us, std::string_view kind) {
  std::optional<std::string> body;
  const std::array<SqlValue, 2> key = {day_us, kind};
  Status read = db_->ForEachRow("read a day kept summed",
                                "SELECT body FROM day_rollups WHERE day_us = ?1 AND kind = ?2", key,
                                [&](SqlRow& row) -> Status {
                                  body = std::string(row.Bytes(0));
                                  return row.Check("day_rollups");
                                });
  if (!read) return read;
  return body;
}

Result<std::vector<Micros>> SqlLedger::KeptDays(std::string_view kind, const TimeRange& range) {
  std::vector<Micros> days;
  const std::array<SqlValue, 3> args = {kind, range.from_us, range.to_us};
  Status read = db_->ForEachRow("list the days kept summed",
                                "SELECT day_us FROM day_rollups WHERE kind = ?1 AND day_us >= ?2 "
                                "AND day_us < ?3 ORDER BY day_us",
                                args, [&](SqlRow& row) -> Status {
                                  days.push_back(row.Int(0));
                                  return row.Check("day_rollups");
                                });
  if (!read) return read;
  return days;
}

Result<bool> SqlLedger::WriteDayRollup(Micros day_us, std::string_view kind,
                                       std::int64_t generation, std::string_view body) {
  if (Status s = db_->CheckWritable(); !s) return s;
  auto txn = BeginWrite();
  if (!txn) return txn.status();
  // The generation's row held first, as every write of hours or bills takes it (PostgreSQL's
  // writers hold no lock on the whole ledger): a write that has not committed yet is waited for
  // and then seen, and one that comes later drops what this keeps.
  const std::array<SqlValue, 1> key = {kGenerationKey};
  if (Status s = db_->Run("hold the ledger generation",
                          "UPDATE meta SET value = value WHERE key = ?1", key);
      !s)
    return s;
  auto now = Generation();
  if (!now) return now.error();
  // Nothing written at all (no row to hold) keeps nothing either.
  if (*now != generation || generation == 0) return false;  // rolled back: nothing written
  const std::array<SqlValue, 3> row = {day_us, kind, SqlBytes{body}};
  if (Status s = db_->Run("keep a day summed",
                          "INSERT INTO day_rollups (day_us, kind, body) VALUES (?1, ?2, ?3) "
                          "ON CONFLICT (day_us, kind) DO UPDATE SET body = excluded.body",
                          row);
      !s)
    return s;
  if (Status s = (*txn)->Commit(); !s) return s;
  return true;
}

}  // namespace

std::unique_ptr<LedgerStore> MakeSqlLedger(std::unique_ptr<SqlConnection> connection) {
  return std::make_unique<SqlLedger>(std::move(connection));
}

}  // namespace gpuledger::store
