// The PostgreSQL ledger: the same tables, keys, semantics and read order as the
// SQLite one (sqlite_ledger.cc), for clusters whose ledger lives on a server
// they already run.
//
// Money and every unit are BIGINT (nanos, µs, mJ, bytes, memory-time in
// KiB-s); there is no floating-point column. Every text column is COLLATE "C" so
// keys and ORDER BY compare bytes, as SQLite's BINARY does: reads come back in
// the same order from both stores. The schema is versioned in `meta` and
// migrated on open under an advisory lock, so two servers opening one database
// at once migrate it once. Tables live in the first schema of the connection's
// search_path (set one with ?options=-csearch_path%3DNAME in the URL).
//
// WriteHours is one transaction: the span's (hour, gpu) keys are deleted from
// both hour tables, then the rows are streamed in with COPY, then labels are
// upserted, so a re-ingest replaces rather than adds. Connection loss is
// kUnavailable and the next call reconnects.

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

#include "store/finding_rows.h"
#include "store/ledger_store.h"
#include "store/postgres_db.h"
#include "store/postgres_schema.h"
#include "store/row_codec.h"

namespace gpuledger::store {
namespace {

using LabelMap = std::map<std::string, std::string>;

// One COPY text-format row, built field by field.
class CopyRow {
 public:
  explicit CopyRow(std::string& out) : out_(out) {}
  ~CopyRow() { out_.push_back('\n'); }
  CopyRow& operator<<(std::string_view v) {
    Sep();
    AppendCopyField(out_, v);
    return *this;
  }
  CopyRow& operator<<(std::int64_t v) {
    Sep();
    fmt::format_to(std::back_inserter(out_), "{}", v);
    return *this;
  }

 private:
  void Sep() {
    if (!first_) out_.push_back('\t');
    first_ = false;
  }
  std::string& out_;
  bool first_ = true;
};

std::string Int64ArrayLiteral(const std::vector<std::int64_t>& values) {
  std::string out = "{";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out.push_back(',');
    out += std::to_string(values[i]);
  }
  out.push_back('}');
  return out;
}

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

// Reads typed columns of one row, remembering the first column that did not
// parse.
class RowReader {
 public:
  RowReader(const PgResult& r, int row) : r_(r), row_(row) {}
  std::string Text(int col) { return r_.Text(row_, col); }
  std::string_view View(int col) { return r_.View(row_, col); }
  std::int64_t Int(int col) {
    std::int64_t v = 0;
    if (!r_.Int(row_, col, v) && bad_col_ < 0) bad_col_ = col;
    return v;
  }
  int bad_col() const { return bad_col_; }

 private:
  const PgResult& r_;
  int row_;
  int bad_col_ = -1;
};

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
  // Runs `sql` through a cursor inside the caller's transaction, `on_row` for each row, a batch
  // at a time: a month of a large cluster is never held as one result.
  Status ForEachRow(std::string_view what, const std::string& sql, const PgParams& params,
                    const std::function<Status(RowReader&)>& on_row);
  Error BadRow(std::string_view table, Micros hour_us, const std::string& gpu,
               std::string_view what) const;
  Error BadColumn(std::string_view table, int col) const;
  Error DuplicateUsage(const Error& error, std::span<const LedgerHour* const> hours) const;

  std::unique_ptr<PgConn> conn_;
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

// A unique violation in usage_hours names the consumer like the SQLite ledger
// does: the server's message has the key's values but not the consumer key
// readers search for.
Error PostgresLedger::DuplicateUsage(const Error& error,
                                     std::span<const LedgerHour* const> hours) const {
  for (const LedgerHour* hour : hours) {
    std::set<std::tuple<std::string_view, std::string_view, std::string_view, std::string_view>>
        seen;
    for (const UsageRow& u : hour->usage) {
      const ConsumerRef& c = u.consumer.ref;
      if (!seen.emplace(c.namespace_name, c.pod, c.container, c.pod_uid.str()).second) {
        return Error{error.code, fmt::format("{} (consumer {}, hour_us {}, gpu {})", error.message,
                                             c.Key(), u.hour_us, u.gpu.str())};
      }
    }
  }
  return error;
}

Status PostgresLedger::WriteHours(std::span<const LedgerHour> hours) {
  if (hours.empty()) return Status::Ok();
  if (auto problem = CheckHours(hours)) {
    return BadRow(problem->table, problem->hour_us, problem->gpu, problem->what);
  }

  // An (hour, gpu) written twice in one span: the later replaces the earlier,
  // as it does when SQLite writes them one after the other.
  std::map<std::pair<Micros, std::string_view>, const LedgerHour*> last;
  for (const LedgerHour& hour : hours) last[{hour.device.hour_us, hour.device.gpu.str()}] = &hour;
  std::vector<const LedgerHour*> kept;
  kept.reserve(last.size());
  std::vector<std::int64_t> key_hours;
  std::vector<std::string_view> key_gpus;
  for (const auto& [key, hour] : last) {
    kept.push_back(hour);
    key_hours.push_back(key.first);
    key_gpus.push_back(key.second);
  }

  std::string devices;
  std::string usage;
  for (const LedgerHour* hour : kept) {
    const DeviceHour& d = hour->device;
    CopyRow(devices) << d.hour_us << d.gpu.str() << d.cluster << d.node << d.gpu_model
                     << ToString(d.sharing) << StoredPricingClass(d) << d.price_nanos
                     << d.metered_us << d.unmetered_us << d.unallocated_us << d.busy_us << d.idle_us
                     << d.unattributed_us << d.memory_total_bytes << d.unattributed_memory_kib_s
                     << d.energy_mj << d.idle_energy_mj << d.unattributed_energy_mj
                     << d.energy_price_nanos;
    for (const UsageRow& u : hour->usage) {
      const ConsumerRef& c = u.consumer.ref;
      CopyRow(usage) << u.hour_us << u.gpu.str() << c.namespace_name << c.pod << c.pod_uid.str()
                     << c.container << u.consumer.owner_kind << u.consumer.owner_name << u.node
                     << u.gpu_model << ToString(u.sharing) << u.device_id << u.allocated_us
                     << u.compute_us << u.memory_kib_s << u.peak_memory_bytes << u.energy_mj
                     << ToString(u.compute_quality) << ToString(u.memory_quality) << u.compute_rule
                     << u.activity.sm_active_us << u.activity.sm_occupancy_us
                     << u.activity.tensor_active_us << u.activity.dram_active_us
                     << ToString(u.activity_quality) << u.activity_rule << u.share_source
                     << EncodeHistogram(u.histogram);
    }
  }

  if (Status s = conn_->Ensure(); !s) return s;
  auto txn = PgTxn::Begin(*conn_);
  if (!txn) return txn.status();
  PgParams keys;
  keys.Add(Int64ArrayLiteral(key_hours)).Add(TextArrayLiteral(key_gpus));
  for (std::string_view table : {"usage_hours", "device_hours"}) {
    auto r = conn_->Exec(fmt::format("delete {}", table),
                         fmt::format("DELETE FROM {} WHERE (hour_us, gpu_uuid) IN "
                                     "(SELECT * FROM unnest($1::bigint[], $2::text[]))",
                                     table),
                         keys);
    if (!r) return r.status();  // ~PgTxn rolls back
  }
  if (Status s =
          conn_->CopyIn("write device_hours",
                        fmt::format("COPY device_hours ({}) FROM STDIN", kDeviceColumns), devices);
      !s) {
    return s;
  }
  if (!usage.empty()) {
    if (Status s =
            conn_->CopyIn("insert usage_hours",
                          fmt::format("COPY usage_hours ({}) FROM STDIN", kUsageColumns), usage);
        !s) {
      if (conn_->last_sqlstate() == "23505") return DuplicateUsage(s.error(), kept);
      return s;
    }
  }
  if (Status s = WriteLabels(hours); !s) return s;
  if (Status s = BumpGeneration(); !s) return s;
  return txn->Commit();
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
                         "EXCLUDED.value",
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
    PgParams del;
    del.Add(TextArrayLiteral(names));
    auto r = conn_->Exec("delete namespace_labels",
                         "DELETE FROM namespace_labels WHERE namespace = ANY($1::text[])", del);
    if (!r) return r.status();
    if (!cols[0].empty()) {
      PgParams p;
      for (const auto& col : cols) p.Add(TextArrayLiteral(col));
      r = conn_->Exec("insert namespace_labels",
                      "INSERT INTO namespace_labels (namespace, key, value) "
                      "SELECT * FROM unnest($1::text[], $2::text[], $3::text[])",
                      p);
      if (!r) return r.status();
    }
  }
  return Status::Ok();
}

Result<std::vector<DeviceHour>> PostgresLedger::ReadDeviceHours(const TimeRange& range) {
  if (Status s = conn_->Ensure(); !s) return s;
  PgParams p;
  p.Add(range.from_us).Add(range.to_us);
  auto r = conn_->Exec("read device_hours",
                       fmt::format("SELECT {} FROM device_hours WHERE hour_us >= $1 AND "
                                   "hour_us < $2 ORDER BY hour_us, gpu_uuid",
                                   kDeviceColumns),
                       p);
  if (!r) return r.error();
  std::vector<DeviceHour> out;
  out.reserve(static_cast<std::size_t>(r->rows()));
  for (int i = 0; i < r->rows(); ++i) {
    RowReader q(*r, i);
    DeviceHour d;
    std::string what;
    const bool decoded = DecodeDeviceHour(q, d, &what);
    if (q.bad_col() >= 0) return BadColumn("device_hours", q.bad_col());
    if (!decoded) return Internal(BadRow("device_hours", d.hour_us, d.gpu.str(), what).message);
    out.push_back(std::move(d));
  }
  return out;
}

Result<std::vector<UsageRow>> PostgresLedger::ReadUsage(const TimeRange& range) {
  if (Status s = conn_->Ensure(); !s) return s;
  // One snapshot: rows and labels agree even while a writer commits.
  auto txn = PgTxn::Begin(*conn_, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  if (!txn) return txn.status();
  PgParams p;
  p.Add(range.from_us).Add(range.to_us);

  LabelTables labels;
  {
    auto r = conn_->Exec("read pod_labels",
                         "SELECT l.namespace, l.pod, l.pod_uid, l.key, l.value FROM pod_labels "
                         "AS l "
                         "JOIN (SELECT DISTINCT namespace, pod, pod_uid FROM usage_hours "
                         "      WHERE hour_us >= $1 AND hour_us < $2) AS p "
                         "ON l.namespace = p.namespace AND l.pod = p.pod AND l.pod_uid = "
                         "p.pod_uid",
                         p);
    if (!r) return r.error();
    for (int i = 0; i < r->rows(); ++i) {
      labels.AddPod(r->Text(i, 0), r->Text(i, 1), r->Text(i, 2), r->Text(i, 3), r->Text(i, 4));
    }
  }
  {
    auto r = conn_->Exec("read namespace_labels",
                         "SELECT namespace, key, value FROM namespace_labels WHERE namespace IN "
                         "(SELECT DISTINCT namespace FROM usage_hours "
                         " WHERE hour_us >= $1 AND hour_us < $2)",
                         p);
    if (!r) return r.error();
    for (int i = 0; i < r->rows(); ++i) {
      labels.AddNamespace(r->Text(i, 0), r->Text(i, 1), r->Text(i, 2));
    }
  }

  auto r = conn_->Exec("read usage_hours",
                       fmt::format("SELECT {} FROM usage_hours WHERE hour_us >= $1 AND "
                                   "hour_us < $2 "
                                   "ORDER BY hour_us, gpu_uuid, namespace, pod, container, pod_uid",
                                   kUsageColumns),
                       p);
  if (!r) return r.error();
  std::vector<UsageRow> out;
  out.reserve(static_cast<std::size_t>(r->rows()));
  for (int i = 0; i < r->rows(); ++i) {
    RowReader q(*r, i);
    UsageRow u;
    std::string what;
    const bool decoded = DecodeUsageRow(q, u, &what);
    if (q.bad_col() >= 0) return BadColumn("usage_hours", q.bad_col());
    if (!decoded) return Internal(BadRow("usage_hours", u.hour_us, u.gpu.str(), what).message);
    labels.Attach(u);
    out.push_back(std::move(u));
  }
  if (Status s = txn->Commit(); !s) return s;
  return out;
}

Status PostgresLedger::ForEachRow(std::string_view what, const std::string& sql,
                                  const PgParams& params,
                                  const std::function<Status(RowReader&)>& on_row) {
  constexpr int kBatchRows = 20000;
  auto declared = conn_->Exec(what, "DECLARE scan_rows NO SCROLL CURSOR FOR " + sql, params);
  if (!declared) return declared.status();
  for (;;) {
    auto r = conn_->Exec(what, fmt::format("FETCH FORWARD {} FROM scan_rows", kBatchRows));
    if (!r) return r.status();
    for (int i = 0; i < r->rows(); ++i) {
      RowReader q(*r, i);
      if (Status s = on_row(q); !s) return s;
    }
    if (r->rows() < kBatchRows) break;
  }
  auto closed = conn_->Exec(what, "CLOSE scan_rows");
  return closed ? Status::Ok() : closed.status();
}

Status PostgresLedger::Scan(const TimeRange& range, LedgerScan& scan) {
  if (Status s = conn_->Ensure(); !s) return s;
  auto txn = PgTxn::Begin(*conn_, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  if (!txn) return txn.status();
  PgParams p;
  p.Add(range.from_us).Add(range.to_us);
  Status read = ForEachRow(
      "read reconciliations",
      fmt::format("SELECT {} FROM reconciliations WHERE day_us >= $1 AND day_us < $2 ORDER BY "
                  "day_us, node",
                  kReconciliationColumns),
      p, [&](RowReader& q) -> Status {
        Reconciliation r = DecodeReconciliation(q);
        if (q.bad_col() >= 0) return BadColumn("reconciliations", q.bad_col());
        return scan.OnReconciliation(r);
      });
  if (!read) return read;
  read = ForEachRow("read pod_labels",
                    "SELECT l.namespace, l.pod, l.pod_uid, l.key, l.value FROM pod_labels AS l "
                    "JOIN (SELECT DISTINCT namespace, pod, pod_uid FROM usage_hours "
                    "      WHERE hour_us >= $1 AND hour_us < $2) AS p "
                    "ON l.namespace = p.namespace AND l.pod = p.pod AND l.pod_uid = p.pod_uid",
                    p, [&](RowReader& q) {
                      return scan.OnPodLabel(q.Text(0), q.Text(1), q.Text(2), q.Text(3), q.Text(4));
                    });
  if (!read) return read;
  read = ForEachRow(
      "read namespace_labels",
      "SELECT namespace, key, value FROM namespace_labels WHERE namespace IN "
      "(SELECT DISTINCT namespace FROM usage_hours "
      " WHERE hour_us >= $1 AND hour_us < $2)",
      p, [&](RowReader& q) { return scan.OnNamespaceLabel(q.Text(0), q.Text(1), q.Text(2)); });
  if (!read) return read;
  DeviceHour d;
  read =
      ForEachRow("read device_hours",
                 fmt::format("SELECT {} FROM device_hours WHERE hour_us >= $1 AND "
                             "hour_us < $2 ORDER BY hour_us, gpu_uuid",
                             kDeviceColumns),
                 p, [&](RowReader& q) -> Status {
                   std::string what;
                   const bool decoded = DecodeDeviceHour(q, d, &what);
                   if (q.bad_col() >= 0) return BadColumn("device_hours", q.bad_col());
                   if (!decoded)
                     return Internal(BadRow("device_hours", d.hour_us, d.gpu.str(), what).message);
                   return scan.OnDeviceHour(d);
                 });
  if (!read) return read;
  UsageRow u;
  read =
      ForEachRow("read usage_hours",
                 fmt::format("SELECT {} FROM usage_hours WHERE hour_us >= $1 AND "
                             "hour_us < $2 ORDER BY hour_us",
                             kUsageColumns),
                 p, [&](RowReader& q) -> Status {
                   std::string what;
                   const bool decoded = DecodeUsageRow(q, u, &what);
                   if (q.bad_col() >= 0) return BadColumn("usage_hours", q.bad_col());
                   if (!decoded)
                     return Internal(BadRow("usage_hours", u.hour_us, u.gpu.str(), what).message);
                   return scan.OnUsage(u);
                 });
  if (!read) return read;
  return txn->Commit();
}

Result<TimeRange> PostgresLedger::Extent() {
  if (Status s = conn_->Ensure(); !s) return s;
  auto r = conn_->Exec("read extent", "SELECT MIN(hour_us), MAX(hour_us) FROM device_hours");
  if (!r) return r.error();
  TimeRange extent{0, 0};
  if (r->rows() == 1 && !r->IsNull(0, 0)) {
    std::int64_t from = 0;
    std::int64_t to = 0;
    if (!r->Int(0, 0, from) || !r->Int(0, 1, to)) return BadColumn("device_hours", 0);
    extent.from_us = from;
    extent.to_us = to + kMicrosPerHour;
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
    RowReader q(*r, i);
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
    RowReader q(*r, i);
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
