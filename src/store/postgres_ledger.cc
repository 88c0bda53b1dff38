// The PostgreSQL ledger: the same tables, keys, semantics and read order as the
// SQLite one (sqlite_ledger.cc), for clusters whose ledger lives on a server
// they already run.
//
// Hours are kept as the SQLite ledger keeps them (store/compact_hours.h), through
// PgHourTables; money and every other figure are integers. Every text column is
// COLLATE "C" so keys and ORDER BY compare bytes, as SQLite's BINARY does. The
// schema is versioned in `meta` and migrated on open under an advisory lock, so
// two servers opening one database at once migrate it once. Tables live in the
// first schema of the connection's search_path (set one with
// ?options=-csearch_path%3DNAME in the URL).
//
// WriteHours is one transaction: the span's (hour, gpu) rows are deleted and
// streamed in again with COPY, then labels are upserted, so a re-ingest replaces
// rather than adds. Connection loss is kUnavailable and the next call reconnects.

#include <fmt/format.h>

#include <array>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <variant>

#include "store/compact_hours.h"
#include "store/finding_rows.h"
#include "store/ledger_store.h"
#include "store/postgres_db.h"
#include "store/postgres_hours.h"
#include "store/postgres_schema.h"
#include "store/row_codec.h"

namespace gpuledger::store {
namespace {

using LabelMap = std::map<std::string, std::string>;

// As Int64ArrayLiteral, with NULL for an unset value.
std::string OptionalInt64ArrayLiteral(const std::vector<std::optional<std::int64_t>>& values) {
  std::string out = "{";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out.push_back(',');
    out += values[i] ? std::to_string(*values[i]) : "NULL";
  }
  out.push_back('}');
  return out;
}

class PostgresLedger final : public LedgerStore {
 public:
  explicit PostgresLedger(std::unique_ptr<PgConn> conn) : conn_(std::move(conn)) {}

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
  Status WriteLabels(std::span<const LedgerHour> hours);
  // Counts one more change of what reports read (inside the writer's transaction).
  Status BumpGeneration();
  Error BadRow(std::string_view table, Micros hour_us, const std::string& gpu,
               std::string_view what) const;
  Error BadColumn(std::string_view table, int col) const;

  std::unique_ptr<PgConn> conn_;
  DimensionCache dimensions_;
};

Error PostgresLedger::BadRow(std::string_view table, Micros hour_us, const std::string& gpu,
                             std::string_view what) const {
  return InvalidArgument(fmt::format("{}: {} row (hour_us {}, gpu {}): {}", conn_->server(), table,
                                     hour_us, gpu, what));
}

Error PostgresLedger::BadColumn(std::string_view table, int col) const {
  return Internal(
      fmt::format("{}: read {}: column {} does not hold a number", conn_->server(), table, col));
}

Status PostgresLedger::WriteHours(std::span<const LedgerHour> hours) {
  if (hours.empty()) return Status::Ok();
  if (auto problem = CheckHours(hours)) {
    return BadRow(problem->table, problem->hour_us, problem->gpu, problem->what);
  }
  if (Status s = conn_->Ensure(); !s) return s;
  auto txn = PgTxn::Begin(*conn_);
  if (!txn) return txn.status();
  PgHourTables tables(*conn_);
  Status written = WriteCompactHours(tables, dimensions_, hours);
  if (written) written = WriteLabels(hours);
  if (written) written = BumpGeneration();
  if (written) written = txn->Commit();
  // Ids learned in a transaction that did not commit may not exist.
  if (!written) dimensions_.Clear();  // ~PgTxn rolls back
  return written;
}

// Pod labels are upserted key by key; a namespace's labels are replaced as a
// whole. Within one span the last row naming a pod or namespace wins, and each
// is written once.
Status PostgresLedger::WriteLabels(std::span<const LedgerHour> hours) {
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
  if (!pods.empty()) {
    std::array<std::vector<std::string_view>, 5> cols;
    for (const auto& [key, labels] : pods) {
      for (const auto& [k, v] : *labels) {
        cols[0].push_back(std::get<0>(key));
        cols[1].push_back(std::get<1>(key));
        cols[2].push_back(std::get<2>(key));
        cols[3].push_back(k);
        cols[4].push_back(v);
      }
    }
    PgParams p;
    for (const auto& col : cols) p.Add(TextArrayLiteral(col));
    auto r = conn_->Exec("write pod_labels",
                         "INSERT INTO pod_labels (namespace, pod, pod_uid, key, value) "
                         "SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], "
                         "$5::text[]) "
                         "ON CONFLICT (namespace, pod, pod_uid, key) DO UPDATE SET value = "
                         "EXCLUDED.value WHERE pod_labels.value <> EXCLUDED.value",
                         p);
    if (!r) return r.status();
  }
  if (!namespaces.empty()) {
    std::vector<std::string_view> names;
    std::array<std::vector<std::string_view>, 3> cols;
    for (const auto& [ns, labels] : namespaces) {
      names.push_back(ns);
      for (const auto& [k, v] : *labels) {
        cols[0].push_back(ns);
        cols[1].push_back(k);
        cols[2].push_back(v);
      }
    }
    // The keys a namespace no longer has go, the others are upserted; a label that did not
    // change is not written again (every hour names every namespace: rewriting them all would
    // leave a dead row per label and hour for vacuum to find).
    PgParams p;
    p.Add(TextArrayLiteral(names)).Add(TextArrayLiteral(cols[0])).Add(TextArrayLiteral(cols[1]));
    auto r = conn_->Exec("delete namespace_labels",
                         "DELETE FROM namespace_labels WHERE namespace = ANY($1::text[]) AND "
                         "(namespace, key) NOT IN (SELECT * FROM unnest($2::text[], $3::text[]))",
                         p);
    if (!r) return r.status();
    if (!cols[0].empty()) {
      PgParams upsert;
      for (const auto& col : cols) upsert.Add(TextArrayLiteral(col));
      r = conn_->Exec("write namespace_labels",
                      "INSERT INTO namespace_labels (namespace, key, value) "
                      "SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) "
                      "ON CONFLICT (namespace, key) DO UPDATE SET value = EXCLUDED.value "
                      "WHERE namespace_labels.value <> EXCLUDED.value",
                      upsert);
      if (!r) return r.status();
    }
  }
  return Status::Ok();
}

Result<std::vector<DeviceHour>> PostgresLedger::ReadDeviceHours(const TimeRange& range) {
  if (Status s = conn_->Ensure(); !s) return s;
  auto txn = PgTxn::Begin(*conn_, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  if (!txn) return txn.status();
  PgHourTables tables(*conn_);
  auto out = ReadCompactDeviceHours(tables, dimensions_, range, conn_->server());
  if (!out) return out;
  if (Status s = txn->Commit(); !s) return s;
  return out;
}

Result<std::vector<UsageRow>> PostgresLedger::ReadUsage(const TimeRange& range) {
  if (Status s = conn_->Ensure(); !s) return s;
  // One snapshot: rows and labels agree even while a writer commits.
  auto txn = PgTxn::Begin(*conn_, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  if (!txn) return txn.status();
  PgHourTables tables(*conn_);
  auto out = ReadCompactUsage(tables, dimensions_, range, conn_->server());
  if (!out) return out;
  if (Status s = txn->Commit(); !s) return s;
  return out;
}

Status PostgresLedger::Scan(const TimeRange& range, LedgerScan& scan) {
  if (Status s = conn_->Ensure(); !s) return s;
  auto txn = PgTxn::Begin(*conn_, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  if (!txn) return txn.status();
  PgParams p;
  p.Add(range.from_us).Add(range.to_us);
  Status read = ForEachPgRow(
      *conn_, "read reconciliations",
      fmt::format("SELECT {} FROM reconciliations WHERE day_us >= $1 AND day_us < $2 ORDER BY "
                  "day_us, node",
                  kReconciliationColumns),
      p, [&](PgRow& q) -> Status {
        Reconciliation r = DecodeReconciliation(q);
        if (q.bad_col() >= 0) return BadColumn("reconciliations", q.bad_col());
        return scan.OnReconciliation(r);
      });
  if (!read) return read;
  PgHourTables tables(*conn_);
  if (Status s = ScanCompactHours(tables, dimensions_, range, scan, conn_->server()); !s) return s;
  return txn->Commit();
}

Result<TimeRange> PostgresLedger::Extent() {
  if (Status s = conn_->Ensure(); !s) return s;
  auto r = conn_->Exec("read extent", "SELECT MIN(hour), MAX(hour) FROM hours");
  if (!r) return r.error();
  TimeRange extent{0, 0};
  if (r->rows() == 1 && !r->IsNull(0, 0)) {
    std::int64_t from = 0;
    std::int64_t to = 0;
    if (!r->Int(0, 0, from) || !r->Int(0, 1, to)) return BadColumn("hours", 0);
    extent.from_us = from * kMicrosPerHour;
    extent.to_us = (to + 1) * kMicrosPerHour;
  }
  return extent;
}

Status PostgresLedger::BumpGeneration() {
  auto r = conn_->Exec("write ledger generation",
                       fmt::format("INSERT INTO meta (key, value) VALUES ('{}', '1') ON CONFLICT "
                                   "(key) DO UPDATE SET value = (meta.value::bigint + 1)::text",
                                   kGenerationKey));
  return r ? Status::Ok() : r.status();
}

Result<std::int64_t> PostgresLedger::Generation() {
  if (Status s = conn_->Ensure(); !s) return s;
  auto r =
      conn_->Exec("read ledger generation",
                  fmt::format("SELECT value::bigint FROM meta WHERE key = '{}'", kGenerationKey));
  if (!r) return r.error();
  std::int64_t generation = 0;
  if (r->rows() == 1 && !r->Int(0, 0, generation)) return BadColumn("meta", 0);
  return generation;
}

Status PostgresLedger::PutMeta(const std::string& key, const std::string& value) {
  if (IsStoreOwnedMetaKey(key)) {
    return InvalidArgument(
        fmt::format("{}: meta key '{}' is owned by the store", conn_->server(), key));
  }
  if (Status s = conn_->Ensure(); !s) return s;
  PgParams p;
  p.Add(key).Add(value);
  auto r = conn_->Exec("write meta",
                       "INSERT INTO meta (key, value) VALUES ($1, $2) "
                       "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                       p);
  return r ? Status::Ok() : r.status();
}

Status PostgresLedger::UpdateMeta(
    const std::map<std::string, std::optional<std::string>>& changes) {
  if (changes.empty()) return Status::Ok();
  for (const auto& [key, value] : changes)
    if (IsStoreOwnedMetaKey(key))
      return InvalidArgument(
          fmt::format("{}: meta key '{}' is owned by the store", conn_->server(), key));
  if (Status s = conn_->Ensure(); !s) return s;
  auto txn = PgTxn::Begin(*conn_);
  if (!txn) return txn.status();
  for (const auto& [key, value] : changes) {
    PgParams p;
    p.Add(key);
    if (value) p.Add(*value);
    auto r = value ? conn_->Exec("write meta",
                                 "INSERT INTO meta (key, value) VALUES ($1, $2) "
                                 "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                                 p)
                   : conn_->Exec("delete meta", "DELETE FROM meta WHERE key = $1", p);
    if (!r) return r.status();  // ~PgTxn rolls back
  }
  return txn->Commit();
}

Result<std::map<std::string, std::string>> PostgresLedger::ReadMeta() {
  if (Status s = conn_->Ensure(); !s) return s;
  auto r = conn_->Exec("read meta", "SELECT key, value FROM meta ORDER BY key");
  if (!r) return r.error();
  std::map<std::string, std::string> out;
  for (int i = 0; i < r->rows(); ++i) out.emplace(r->Text(i, 0), r->Text(i, 1));
  return out;
}

Status PostgresLedger::WriteReconciliations(std::span<const Reconciliation> reconciliations) {
  if (reconciliations.empty()) return Status::Ok();
  for (const Reconciliation& r : reconciliations) {
    if (r.node.empty() || DayStart(r.day_us) != r.day_us) {
      return InvalidArgument(
          fmt::format("{}: reconciliations row (node '{}', day_us {}): empty "
                      "node or not a day start",
                      conn_->server(), r.node, r.day_us));
    }
  }
  if (Status s = conn_->Ensure(); !s) return s;
  auto txn = PgTxn::Begin(*conn_);
  if (!txn) return txn.status();
  // Row by row (a bill is one row per node-day): a later row of the span
  // replaces an earlier one of the same key, as in SQLite.
  const std::string sql = fmt::format(
      "INSERT INTO reconciliations ({}) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9) "
      "ON CONFLICT (day_us, node) DO UPDATE SET modelled_nanos = "
      "EXCLUDED.modelled_nanos, "
      "billed_nanos = EXCLUDED.billed_nanos, factor = EXCLUDED.factor, "
      "factor_ppm = EXCLUDED.factor_ppm, currency = EXCLUDED.currency, "
      "bill_file = EXCLUDED.bill_file, imported_at_us = "
      "EXCLUDED.imported_at_us",
      kReconciliationColumns);
  for (const Reconciliation& rec : reconciliations) {
    PgParams p;
    p.Add(rec.node)
        .Add(rec.day_us)
        .Add(rec.modelled_nanos)
        .Add(rec.billed_nanos)
        .Add(rec.factor)
        .Add(rec.factor_ppm)
        .Add(rec.currency)
        .Add(rec.bill_file)
        .Add(rec.imported_at_us);
    auto r = conn_->Exec("write reconciliations", sql, p);
    if (!r) return r.status();  // ~PgTxn rolls back
  }
  if (Status s = BumpGeneration(); !s) return s;
  return txn->Commit();
}

Result<std::vector<Reconciliation>> PostgresLedger::ReadReconciliations(const TimeRange& range) {
  if (Status s = conn_->Ensure(); !s) return s;
  PgParams p;
  p.Add(range.from_us).Add(range.to_us);
  auto r = conn_->Exec("read reconciliations",
                       fmt::format("SELECT {} FROM reconciliations WHERE day_us >= $1 AND "
                                   "day_us < $2 ORDER BY day_us, node",
                                   kReconciliationColumns),
                       p);
  if (!r) return r.error();
  std::vector<Reconciliation> out;
  for (int i = 0; i < r->rows(); ++i) {
    PgRow q(*r, i);
    Reconciliation rec = DecodeReconciliation(q);
    if (q.bad_col() >= 0) return BadColumn("reconciliations", q.bad_col());
    out.push_back(std::move(rec));
  }
  return out;
}

Status PostgresLedger::WriteFindings(std::span<const Finding> findings) {
  if (findings.empty()) return Status::Ok();
  if (Status s = CheckFindings(findings, conn_->server()); !s) return s;
  // One statement over arrays; an upsert may not touch a row twice, so the span's last
  // finding of each key is the one written, as if they were written one after the other.
  const std::vector<const Finding*> kept = LastOfEachKey(findings);
  std::array<std::vector<std::string_view>, 10> text;  // the text columns, in kFindingColumns order
  std::vector<std::int64_t> first_seen, last_seen;
  std::vector<std::optional<std::int64_t>> resolved;
  for (const Finding* f : kept) {
    text[0].push_back(f->cluster);
    text[1].push_back(f->node);
    text[2].push_back(ToString(f->kind));
    text[3].push_back(f->subject.namespace_name);
    text[4].push_back(f->subject.pod);
    text[5].push_back(f->subject.pod_uid.str());
    text[6].push_back(f->subject.container);
    text[7].push_back(f->gpu_uuid);
    text[8].push_back(ToString(f->severity));
    text[9].push_back(f->evidence);
    first_seen.push_back(f->first_seen_us);
    last_seen.push_back(f->last_seen_us);
    resolved.push_back(f->resolved_us);
  }
  PgParams p;
  for (std::size_t i = 0; i < 8; ++i) p.Add(TextArrayLiteral(text[i]));
  p.Add(Int64ArrayLiteral(first_seen));
  p.Add(TextArrayLiteral(text[8])).Add(TextArrayLiteral(text[9]));
  p.Add(Int64ArrayLiteral(last_seen)).Add(OptionalInt64ArrayLiteral(resolved));
  const std::string sql = fmt::format(
      "INSERT INTO findings ({}) SELECT * FROM unnest($1::text[], $2::text[], $3::text[], "
      "$4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::bigint[], $10::text[], "
      "$11::text[], $12::bigint[], $13::bigint[]) ON CONFLICT ({}) DO UPDATE SET {}",
      kFindingColumns, kFindingKeyColumns, kFindingUpdate);
  if (Status s = conn_->Ensure(); !s) return s;
  // One statement, so one transaction: on failure nothing of the span is kept.
  auto r = conn_->Exec("write findings", sql, p);
  return r ? Status::Ok() : r.status();
}

Result<std::vector<Finding>> PostgresLedger::ReadFindings(const FindingQuery& query) {
  if (Status s = conn_->Ensure(); !s) return s;
  const FindingFilter filter = MakeFindingFilter(query, '$');
  PgParams p;
  for (const auto& arg : filter.args) {
    if (const auto* n = std::get_if<std::int64_t>(&arg)) {
      p.Add(*n);
    } else {
      p.Add(std::get<std::string>(arg));
    }
  }
  auto r = conn_->Exec("read findings",
                       fmt::format("SELECT {} FROM findings{}", kFindingColumns, filter.where), p);
  if (!r) return r.error();
  std::vector<Finding> out;
  out.reserve(static_cast<std::size_t>(r->rows()));
  for (int i = 0; i < r->rows(); ++i) {
    PgRow q(*r, i);
    Finding f;
    std::string what;
    const bool decoded = DecodeFindingRow(q, r->IsNull(i, 12), f, &what);
    if (q.bad_col() >= 0) return BadColumn("findings", q.bad_col());
    if (!decoded) {
      return Internal(fmt::format("{}: findings row: {}", conn_->server(), what));
    }
    if (KeepFinding(f, query)) out.push_back(std::move(f));
  }
  SortFindings(out);
  return out;
}

}  // namespace

Result<std::unique_ptr<LedgerStore>> OpenPostgresLedger(const std::string& url) {
  auto conn = PgConn::Open(url);
  if (!conn) return conn.error();
  if (Status s = MigratePostgresLedger(**conn); !s) return s;
  return std::unique_ptr<LedgerStore>(std::make_unique<PostgresLedger>(std::move(*conn)));
}

}  // namespace gpuledger::store
