#include "store/sqlite_schema.h"

#include "store/compact_hours.h"
#include "store/row_codec.h"
#include "store/sqlite_connection.h"

#include <array>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>

#include <fmt/format.h>

namespace gpuledger::store {
namespace {

// migrations[i] takes the schema from version i to i + 1 (7 -> 8 converts the rows in code:
// MigrateToCompactHours).
constexpr std::array<std::string_view, kSchemaVersion> kMigrations = {
    R"sql(
CREATE TABLE device_hours (
  hour_us                     INTEGER NOT NULL,
  gpu_uuid                    TEXT    NOT NULL,
  cluster                     TEXT    NOT NULL,
  node                        TEXT    NOT NULL,
  gpu_model                   TEXT    NOT NULL,
  sharing_mode                TEXT    NOT NULL,
  pricing_class               TEXT    NOT NULL,
  price_nanos                 INTEGER NOT NULL,
  metered_us                  INTEGER NOT NULL,
  unmetered_us                INTEGER NOT NULL,
  unallocated_us              INTEGER NOT NULL,
  busy_us                     INTEGER NOT NULL,
  idle_us                     INTEGER NOT NULL,
  unattributed_us             INTEGER NOT NULL,
  memory_total_bytes          INTEGER NOT NULL,
  unattributed_memory_byte_us REAL    NOT NULL,
  energy_mj                   INTEGER NOT NULL,
  idle_energy_mj              INTEGER NOT NULL,
  unattributed_energy_mj      INTEGER NOT NULL,
  PRIMARY KEY (hour_us, gpu_uuid)
) STRICT;

-- The key is (hour, gpu, consumer); its columns are ordered as reads sort, so the key's index
-- serves both hour-range scans and the deterministic read order.
CREATE TABLE usage_hours (
  hour_us           INTEGER NOT NULL,
  gpu_uuid          TEXT    NOT NULL,
  namespace         TEXT    NOT NULL,
  pod               TEXT    NOT NULL,
  pod_uid           TEXT    NOT NULL,
  container         TEXT    NOT NULL,
  owner_kind        TEXT    NOT NULL,
  owner_name        TEXT    NOT NULL,
  node              TEXT    NOT NULL,
  gpu_model         TEXT    NOT NULL,
  sharing_mode      TEXT    NOT NULL,
  device_id         TEXT    NOT NULL,
  allocated_us      INTEGER NOT NULL,
  compute_us        INTEGER NOT NULL,
  memory_byte_us    REAL    NOT NULL,
  peak_memory_bytes INTEGER NOT NULL,
  energy_mj         INTEGER NOT NULL,
  compute_quality   TEXT    NOT NULL,
  memory_quality    TEXT    NOT NULL,
  compute_rule      TEXT    NOT NULL,
  PRIMARY KEY (hour_us, gpu_uuid, namespace, pod, container, pod_uid)
) STRICT;
CREATE INDEX usage_hours_by_namespace ON usage_hours (namespace, hour_us);

CREATE TABLE pod_labels (
  namespace TEXT NOT NULL,
  pod       TEXT NOT NULL,
  pod_uid   TEXT NOT NULL,
  key       TEXT NOT NULL,
  value     TEXT NOT NULL,
  PRIMARY KEY (namespace, pod, pod_uid, key)
) STRICT;

CREATE TABLE namespace_labels (
  namespace TEXT NOT NULL,
  key       TEXT NOT NULL,
  value     TEXT NOT NULL,
  PRIMARY KEY (namespace, key)
) STRICT;
)sql",
    // 1 -> 2: bill reconciliations, one per (node, UTC day). The factor is kept as the exact
    // reduced ratio text; factor_ppm is for people reading the table.
    R"sql(
CREATE TABLE reconciliations (
  node           TEXT    NOT NULL,
  day_us         INTEGER NOT NULL,
  modelled_nanos INTEGER NOT NULL,
  billed_nanos   INTEGER NOT NULL,
  factor         TEXT    NOT NULL,
  factor_ppm     INTEGER NOT NULL,
  currency       TEXT    NOT NULL,
  bill_file      TEXT    NOT NULL,
  imported_at_us INTEGER NOT NULL,
  PRIMARY KEY (day_us, node)
) STRICT;
)sql",
    // 2 -> 3: the electricity part of a device-hour's price (on-prem, by measured energy).
    R"sql(
ALTER TABLE device_hours ADD COLUMN energy_price_nanos INTEGER NOT NULL DEFAULT 0;
)sql",
    // 3 -> 4: memory-time as exact integer KiB-s (1 KiB-s = 1024e6 byte-µs) in place of the
    // REAL byte-µs: rounded to the nearest KiB-s, halves away from zero; CAST saturates at the
    // int64 range. ADD and DROP COLUMN keep the tables STRICT.
    R"sql(
ALTER TABLE device_hours ADD COLUMN unattributed_memory_kib_s INTEGER NOT NULL DEFAULT 0;
UPDATE device_hours
   SET unattributed_memory_kib_s = CAST(round(unattributed_memory_byte_us / 1024e6) AS INTEGER);
ALTER TABLE device_hours DROP COLUMN unattributed_memory_byte_us;
ALTER TABLE usage_hours ADD COLUMN memory_kib_s INTEGER NOT NULL DEFAULT 0;
UPDATE usage_hours SET memory_kib_s = CAST(round(memory_byte_us / 1024e6) AS INTEGER);
ALTER TABLE usage_hours DROP COLUMN memory_byte_us;
)sql",
    // 4 -> 5: SM, tensor and DRAM activity in integer GPU-µs, where it came from
    // ("<quality>" of model/sharing.h; 'none' when no source gave it) and by which rule, and
    // where a declared share came from. Rows written before have none of it: 0, 'none', ''.
    R"sql(
ALTER TABLE usage_hours ADD COLUMN sm_active_us     INTEGER NOT NULL DEFAULT 0;
ALTER TABLE usage_hours ADD COLUMN sm_occupancy_us  INTEGER NOT NULL DEFAULT 0;
ALTER TABLE usage_hours ADD COLUMN tensor_active_us INTEGER NOT NULL DEFAULT 0;
ALTER TABLE usage_hours ADD COLUMN dram_active_us   INTEGER NOT NULL DEFAULT 0;
ALTER TABLE usage_hours ADD COLUMN activity_quality TEXT    NOT NULL DEFAULT 'none';
ALTER TABLE usage_hours ADD COLUMN activity_rule    TEXT    NOT NULL DEFAULT '';
ALTER TABLE usage_hours ADD COLUMN share_source     TEXT    NOT NULL DEFAULT '';
)sql",
    // 5 -> 6: guardrail findings, one row per Finding::Key(). The key's columns start with
    // first_seen_us, so its index serves the time-range reads; open findings per node (what
    // the ingest restores and resolves) have a partial index of their own. Kind and severity
    // are their model names; resolved_us is NULL while the finding is open.
    R"sql(
CREATE TABLE findings (
  first_seen_us INTEGER NOT NULL,
  node          TEXT    NOT NULL,
  kind          TEXT    NOT NULL,
  namespace     TEXT    NOT NULL,
  pod           TEXT    NOT NULL,
  pod_uid       TEXT    NOT NULL,
  container     TEXT    NOT NULL,
  gpu_uuid      TEXT    NOT NULL,
  cluster       TEXT    NOT NULL,
  severity      TEXT    NOT NULL,
  evidence      TEXT    NOT NULL,
  last_seen_us  INTEGER NOT NULL,
  resolved_us   INTEGER,
  PRIMARY KEY (first_seen_us, node, kind, namespace, pod, pod_uid, container, gpu_uuid, cluster)
) STRICT;
CREATE INDEX findings_open_by_node ON findings (cluster, node) WHERE resolved_us IS NULL;
)sql",
    // 6 -> 7: the hour's rightsizing histogram counts (store/row_codec.h EncodeHistogram);
    // rows written before have none: ''.
    R"sql(
ALTER TABLE usage_hours ADD COLUMN histogram TEXT NOT NULL DEFAULT '';
)sql",
    // 7 -> 8 converts the rows in code (MigrateToCompactHours).
    "",
    // 8 -> 9: the hours each of the last writes touched, by the generation it made (a reader
    // that keeps a copy reloads only those: LedgerStore::ChangesSince).
    R"sql(
CREATE TABLE ledger_changes (
  generation INTEGER PRIMARY KEY NOT NULL,
  from_us    INTEGER NOT NULL,
  to_us      INTEGER NOT NULL
) STRICT;
)sql",
    // 9 -> 10 adds placements.layout in code (MigrateToPlacementLayouts).
    "",
    // 10 -> 11 moves labels into the consumers dictionary in code (MigrateToConsumerLabels).
    "",
    // 11 -> 12: closed statements, every version kept (model/statement.h).
    R"sql(
CREATE TABLE statements (
  period           TEXT    NOT NULL,
  policy           TEXT    NOT NULL,
  idle             TEXT    NOT NULL,
  version          INTEGER NOT NULL,
  from_us          INTEGER NOT NULL,
  to_us            INTEGER NOT NULL,
  closed_at_us     INTEGER NOT NULL,
  build            TEXT    NOT NULL,
  provenance       TEXT    NOT NULL,
  total_cost_nanos INTEGER NOT NULL,
  body             BLOB    NOT NULL,
  PRIMARY KEY (period, policy, idle, version)
) STRICT;
)sql",
    // 12 -> 13: days kept summed per policy and idle handling (ledger/day_rollup.h), dropped
    // by any write that touches their day.
    R"sql(
CREATE TABLE day_rollups (
  day_us INTEGER NOT NULL,
  kind   TEXT    NOT NULL,
  body   BLOB    NOT NULL,
  PRIMARY KEY (day_us, kind)
) STRICT;
)sql",
    // 13 -> 14: what inference engines served, per (hour, consumer, model) (model/tokens.h).
    R"sql(
CREATE TABLE token_hours (
  hour_us       INTEGER NOT NULL,
  cluster       TEXT    NOT NULL,
  namespace     TEXT    NOT NULL,
  pod           TEXT    NOT NULL,
  pod_uid       TEXT    NOT NULL,
  container     TEXT    NOT NULL,
  model         TEXT    NOT NULL,
  engine        TEXT    NOT NULL,
  input_tokens  INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  requests      INTEGER NOT NULL,
  prefill_us    INTEGER NOT NULL,
  decode_us     INTEGER NOT NULL,
  PRIMARY KEY (hour_us, cluster, namespace, pod, pod_uid, container, model, engine)
) STRICT;
)sql",
    kMoveIngestStateUnderItsCluster,  // 14 -> 15
};

constexpr std::string_view kCreateMeta =
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) STRICT";

// The schema version recorded in the file; 0 for a new (or pre-versioning) file.
Result<std::int64_t> ReadSchemaVersion(SqliteDb& db) {
  auto has_meta = db.Prepare(
      "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'meta'", "read schema");
  if (!has_meta) return has_meta.error();
  auto row = has_meta->Step();
  if (!row) return row.error();
  bool exists = *row && has_meta->Int(0) > 0;
  has_meta->Reset();
  if (!exists) return std::int64_t{0};

  auto q = db.Prepare("SELECT value FROM meta WHERE key = 'schema_version'", "read schema_version");
  if (!q) return q.error();
  row = q->Step();
  if (!row) return row.error();
  if (!*row) return std::int64_t{0};
  std::string text = q->Text(0);
  q->Reset();
  std::int64_t version = 0;
  try {
    std::size_t used = 0;
    version = std::stoll(text, &used);
    if (used != text.size()) throw std::invalid_argument(text);
  } catch (const std::exception&) {
    return Internal(
        fmt::format("sqlite {}: meta schema_version '{}' is not a number", db.path(), text));
  }
  return version;
}

// A schema-7 table through a statement over it.
template <typename Row>
class SqliteLegacyRows final : public LegacyRows<Row> {
 public:
  SqliteLegacyRows(SqliteStmt stmt, std::string_view table, std::string errors_name)
      : stmt_(std::move(stmt)), table_(table), errors_name_(std::move(errors_name)) {}
  Result<bool> Next(Row& row) override {
    auto more = stmt_.Step();
    if (!more || !*more) return more;
    std::string what;
    bool decoded = false;
    if constexpr (std::is_same_v<Row, DeviceHour>) {
      decoded = DecodeDeviceHour(stmt_, row, &what);
    } else {
      decoded = DecodeUsageRow(stmt_, row, &what);
    }
    if (decoded) return true;
    stmt_.Reset();
    return Internal(fmt::format("{}: migrate schema 7 -> 8: {} row (hour_us {}, gpu {}): {}",
                                errors_name_, table_, row.hour_us, row.gpu.str(), what));
  }

 private:
  SqliteStmt stmt_;
  std::string_view table_;
  std::string errors_name_;
};

// 7 -> 8 (issue 37): the hours move from one row per device-hour and per usage row, strings
// repeated in each, to one `hours` row per (hour, GPU) with the strings in dictionaries
// (store/compact_hours.h); the old tables go. A file that cannot move fails the migration,
// which leaves it as it was.
Status MigrateToCompactHours(SqliteDb& db) {
  if (Status s = db.Exec(CompactTablesSql(kSqliteDialect), "migrate schema 7 -> 8: create"); !s)
    return s;
  {
    const std::string name = "sqlite " + db.path();
    SqliteConnection connection(db);
    auto devices = db.Prepare(
        fmt::format("SELECT {} FROM device_hours ORDER BY hour_us, gpu_uuid", kDeviceColumns),
        "migrate schema 7 -> 8: read device_hours");
    if (!devices) return devices.status();
    auto usage = db.Prepare(fmt::format("SELECT {} FROM usage_hours ORDER BY hour_us, gpu_uuid, "
                                        "namespace, pod, container, pod_uid",
                                        kUsageColumns),
                            "migrate schema 7 -> 8: read usage_hours");
    if (!usage) return usage.status();
    SqliteLegacyRows<DeviceHour> device_rows(std::move(*devices), "device_hours", name);
    SqliteLegacyRows<UsageRow> usage_rows(std::move(*usage), "usage_hours", name);
    if (Status s = MoveToCompactHours(device_rows, usage_rows, connection); !s) return s;
  }  // the statements go before their tables
  return db.Exec("DROP TABLE usage_hours; DROP TABLE device_hours;",
                 "migrate schema 7 -> 8: drop the old tables");
}

// Whether `table` has `column` (a migration that adds it may find it made already by the
// 7 -> 8 step of this build).
Result<bool> HasColumn(SqliteDb& db, const std::string& what, std::string_view table,
                       std::string_view column) {
  auto has = db.Prepare(
      fmt::format("SELECT count(*) FROM pragma_table_info('{}') WHERE name = '{}'", table, column),
      what);
  if (!has) return has.status();
  auto row = has->Step();
  if (!row) return row.error();
  const bool present = *row && has->Int(0) > 0;
  has->Reset();
  return present;
}

// 9 -> 10 (issue 36): placements gain `layout` (a GPU's MIG layout or replicas, DeviceHour),
// part of their key. A ledger that came through 7 -> 8 with this build has it already (that
// step creates the dictionaries as this build has them); any other gets the table rebuilt with
// it (SQLite cannot change a table's UNIQUE), ids kept, every old entry's layout "".
Status MigrateToPlacementLayouts(SqliteDb& db) {
  const std::string what = "migrate schema 9 -> 10";
  auto has = HasColumn(db, what, "placements", "layout");
  if (!has) return has.status();
  if (*has) return Status::Ok();
  return db.Exec(
      DictionarySql(kSqliteDialect, Dimension::kPlacement, "placements_10") +
          "INSERT INTO placements_10 (id, cluster, node, gpu_model, sharing_mode, pricing_class, "
          "layout) SELECT id, cluster, node, gpu_model, sharing_mode, pricing_class, '' FROM "
          "placements;\nDROP TABLE placements;\nALTER TABLE placements_10 RENAME TO placements;",
      what);
}

// 10 -> 11 (issue 38): a consumer's labels (its pod's and namespace's) become part of its
// dictionary entry, so each row keeps the labels in force when it was written; the side tables
// that held one set per pod and namespace go, their sets given to the consumers of their pods
// (MoveLabelsIntoConsumers). A ledger that came through 7 -> 8 with this build has the columns.
Status MigrateToConsumerLabels(SqliteDb& db) {
  const std::string what = "migrate schema 10 -> 11";
  auto has = HasColumn(db, what, "consumers", "labels");
  if (!has) return has.status();
  if (!*has) {
    Status rebuilt = db.Exec(
        DictionarySql(kSqliteDialect, Dimension::kConsumer, "consumers_11") +
            "INSERT INTO consumers_11 (id, namespace, pod, pod_uid, container, owner_kind, "
            "owner_name, labels, namespace_labels) SELECT id, namespace, pod, pod_uid, container, "
            "owner_kind, owner_name, '', '' FROM consumers;\nDROP TABLE consumers;\nALTER TABLE "
            "consumers_11 RENAME TO consumers;",
        what);
    if (!rebuilt) return rebuilt;
  }
  SqliteConnection connection(db);
  return MoveLabelsIntoConsumers(connection);
}

}  // namespace

Status RefuseAnotherProgramsDatabase(SqliteDb& db) {
  auto version = ReadSchemaVersion(db);
  if (!version) return version.status();
  if (*version != 0) return Status::Ok();
  // No schema version: a new file, or another program's database, which must not gain
  // gpuledger's tables (issue 58: `report --db` on a foreign file wrote them into it). A ledger
  // from before versions has its device_hours.
  auto tables = db.Prepare(
      "SELECT name FROM sqlite_schema WHERE type = 'table' AND name "
      "NOT LIKE 'sqlite_%' AND name <> 'meta' AND NOT EXISTS (SELECT 1 "
      "FROM sqlite_schema WHERE name = 'device_hours') ORDER BY name LIMIT 3",
      "read schema");
  if (!tables) return tables.status();
  std::string names;
  for (;;) {
    auto row = tables->Step();
    if (!row) return row.status();
    if (!*row) break;
    names += (names.empty() ? "" : ", ") + tables->Text(0);
  }
  tables->Reset();
  if (names.empty()) return Status::Ok();
  // Another writer opening the same new file may have committed its schema (tables and version
  // in one transaction) between the two reads above: read the version again, after the tables.
  auto again = ReadSchemaVersion(db);
  if (!again) return again.status();
  if (*again != 0) return Status::Ok();
  return InvalidArgument(fmt::format(
      "sqlite {}: not a gpuledger ledger (it holds other tables: {}); name a ledger, or a new "
      "file for a new one",
      db.path(), names));
}

Status MigrateSqliteLedger(SqliteDb& db, bool read_only) {
  return MigrateSqliteLedgerTo(db, read_only, kSchemaVersion);
}

Status MigrateSqliteLedgerTo(SqliteDb& db, bool read_only, std::int64_t target) {
  auto version = ReadSchemaVersion(db);
  if (!version) return version.status();
  if (*version == target) return Status::Ok();
  if (*version > kSchemaVersion || *version < 0) {
    return Unsupported(
        fmt::format("sqlite {}: ledger schema version {} is newer than this build supports ({})",
                    db.path(), *version, kSchemaVersion));
  }
  if (read_only) {
    return Unsupported(fmt::format(
        "sqlite {}: ledger schema version {} needs migrating to {}; open it read-write once",
        db.path(), *version, kSchemaVersion));
  }

  // Re-read under the write lock: another process may have migrated meanwhile.
  auto txn = SqliteTxn::Begin(db, /*immediate=*/true);
  if (!txn) return txn.status();
  if (Status s = db.Exec(kCreateMeta, "create meta"); !s) return s;
  version = ReadSchemaVersion(db);
  if (!version) return version.status();
  for (std::int64_t v = *version; v < target; ++v) {
    const std::string what = fmt::format("migrate schema {} -> {}", v, v + 1);
    Status s = v == 7    ? MigrateToCompactHours(db)
               : v == 9  ? MigrateToPlacementLayouts(db)
               : v == 10 ? MigrateToConsumerLabels(db)
                         : db.Exec(kMigrations[static_cast<std::size_t>(v)], what);
    if (!s) return s;
  }
  if (Status s = db.Exec(fmt::format("INSERT OR REPLACE INTO meta (key, value) "
                                     "VALUES ('schema_version', '{}')",
                                     target),
                         "write schema_version");
      !s) {
    return s;
  }
  return txn->Commit();
}

Status ConfigureSqliteLedger(SqliteDb& db, const SqliteLedgerOptions& options) {
  sqlite3_busy_timeout(db.handle(), options.busy_timeout_ms);
  if (Status s = RefuseAnotherProgramsDatabase(db); !s) return s;
  if (Status s = db.Exec("PRAGMA foreign_keys = OFF", "set foreign_keys=OFF"); !s) return s;
  if (!options.read_only) {
    // The first statement that reads the file: a file that is not a database fails here.
    auto mode = db.Prepare("PRAGMA journal_mode = WAL", "set journal_mode=WAL");
    if (!mode) return mode.status();
    // Switching a new file to WAL needs it alone, and SQLite may answer "locked" without calling
    // the busy handler (it would risk a deadlock), so writers opening one new file together
    // retry here for as long as the busy timeout allows.
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(options.busy_timeout_ms);
    auto row = mode->Step();
    while (!row && row.error().code == ErrorCode::kUnavailable &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      row = mode->Step();
    }
    if (!row) return row.status();
    std::string got = *row ? mode->Text(0) : "";
    mode->Reset();
    if (got != "wal" && db.path() != ":memory:") {
      return IoError(fmt::format("sqlite {}: set journal_mode=WAL: got '{}'", db.path(), got));
    }
    if (Status s = db.Exec("PRAGMA synchronous = NORMAL", "set synchronous=NORMAL"); !s) {
      return s;
    }
  }
  return Status::Ok();
}

}  // namespace gpuledger::store
