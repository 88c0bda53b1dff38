#include "store/postgres_schema.h"

#include <array>
#include <string>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>

#include "store/compact_hours.h"
#include "store/postgres_connection.h"
#include "store/row_codec.h"

namespace gpuledger::store {
namespace {

// migrations[i] takes the schema from version i to i + 1; each mirrors the
// SQLite one (7 -> 8 converts the rows in code: MigrateToCompactHours).
constexpr std::array<std::string_view, kSchemaVersion> kMigrations = {
    R"sql(
CREATE TABLE device_hours (
  hour_us                     BIGINT           NOT NULL,
  gpu_uuid                    TEXT COLLATE "C" NOT NULL,
  cluster                     TEXT COLLATE "C" NOT NULL,
  node                        TEXT COLLATE "C" NOT NULL,
  gpu_model                   TEXT COLLATE "C" NOT NULL,
  sharing_mode                TEXT COLLATE "C" NOT NULL,
  pricing_class               TEXT COLLATE "C" NOT NULL,
  price_nanos                 BIGINT           NOT NULL,
  metered_us                  BIGINT           NOT NULL,
  unmetered_us                BIGINT           NOT NULL,
  unallocated_us              BIGINT           NOT NULL,
  busy_us                     BIGINT           NOT NULL,
  idle_us                     BIGINT           NOT NULL,
  unattributed_us             BIGINT           NOT NULL,
  memory_total_bytes          BIGINT           NOT NULL,
  unattributed_memory_byte_us DOUBLE PRECISION NOT NULL,
  energy_mj                   BIGINT           NOT NULL,
  idle_energy_mj              BIGINT           NOT NULL,
  unattributed_energy_mj      BIGINT           NOT NULL,
  PRIMARY KEY (hour_us, gpu_uuid)
);

-- The key's columns are ordered as reads sort, so its index serves range scans and order.
CREATE TABLE usage_hours (
  hour_us           BIGINT           NOT NULL,
  gpu_uuid          TEXT COLLATE "C" NOT NULL,
  namespace         TEXT COLLATE "C" NOT NULL,
  pod               TEXT COLLATE "C" NOT NULL,
  pod_uid           TEXT COLLATE "C" NOT NULL,
  container         TEXT COLLATE "C" NOT NULL,
  owner_kind        TEXT COLLATE "C" NOT NULL,
  owner_name        TEXT COLLATE "C" NOT NULL,
  node              TEXT COLLATE "C" NOT NULL,
  gpu_model         TEXT COLLATE "C" NOT NULL,
  sharing_mode      TEXT COLLATE "C" NOT NULL,
  device_id         TEXT COLLATE "C" NOT NULL,
  allocated_us      BIGINT           NOT NULL,
  compute_us        BIGINT           NOT NULL,
  memory_byte_us    DOUBLE PRECISION NOT NULL,
  peak_memory_bytes BIGINT           NOT NULL,
  energy_mj         BIGINT           NOT NULL,
  compute_quality   TEXT COLLATE "C" NOT NULL,
  memory_quality    TEXT COLLATE "C" NOT NULL,
  compute_rule      TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (hour_us, gpu_uuid, namespace, pod, container, pod_uid)
);
CREATE INDEX usage_hours_by_namespace ON usage_hours (namespace, hour_us);

CREATE TABLE pod_labels (
  namespace TEXT COLLATE "C" NOT NULL,
  pod       TEXT COLLATE "C" NOT NULL,
  pod_uid   TEXT COLLATE "C" NOT NULL,
  key       TEXT COLLATE "C" NOT NULL,
  value     TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (namespace, pod, pod_uid, key)
);

CREATE TABLE namespace_labels (
  namespace TEXT COLLATE "C" NOT NULL,
  key       TEXT COLLATE "C" NOT NULL,
  value     TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (namespace, key)
);
)sql",
    // 1 -> 2: bill reconciliations, one per (node, UTC day).
    R"sql(
CREATE TABLE reconciliations (
  node           TEXT COLLATE "C" NOT NULL,
  day_us         BIGINT           NOT NULL,
  modelled_nanos BIGINT           NOT NULL,
  billed_nanos   BIGINT           NOT NULL,
  factor         TEXT COLLATE "C" NOT NULL,
  factor_ppm     BIGINT           NOT NULL,
  currency       TEXT COLLATE "C" NOT NULL,
  bill_file      TEXT COLLATE "C" NOT NULL,
  imported_at_us BIGINT           NOT NULL,
  PRIMARY KEY (day_us, node)
);
)sql",
    // 2 -> 3: the electricity part of a device-hour's price (on-prem, by
    // measured energy).
    R"sql(
ALTER TABLE device_hours ADD COLUMN energy_price_nanos BIGINT NOT NULL DEFAULT 0;
)sql",
    // 3 -> 4: memory-time as exact integer KiB-s (1 KiB-s = 1024e6 byte-µs) in
    // place of the DOUBLE PRECISION byte-µs. Converted exactly as SQLite does:
    // the double quotient rounded to nearest, halves away from zero, saturating
    // at the int64 range; NaN (which SQLite cannot hold) becomes 0.
    R"sql(
CREATE FUNCTION pg_temp.gpuledger_kib_s(byte_us DOUBLE PRECISION) RETURNS BIGINT
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN byte_us = 'NaN'::float8 THEN 0::bigint
    WHEN q >= 9223372036854775807::float8 THEN 9223372036854775807::bigint
    WHEN q <= -9223372036854775807::float8 THEN (-9223372036854775807 - 1)::bigint
    ELSE (sign(q) * trunc(abs(q) + 0.5))::bigint
  END
  FROM (SELECT byte_us / 1024e6::float8 AS q) AS quotient
$$;
ALTER TABLE device_hours ADD COLUMN unattributed_memory_kib_s BIGINT NOT NULL DEFAULT 0;
UPDATE device_hours
   SET unattributed_memory_kib_s = pg_temp.gpuledger_kib_s(unattributed_memory_byte_us);
ALTER TABLE device_hours DROP COLUMN unattributed_memory_byte_us;
ALTER TABLE usage_hours ADD COLUMN memory_kib_s BIGINT NOT NULL DEFAULT 0;
UPDATE usage_hours SET memory_kib_s = pg_temp.gpuledger_kib_s(memory_byte_us);
ALTER TABLE usage_hours DROP COLUMN memory_byte_us;
DROP FUNCTION pg_temp.gpuledger_kib_s(DOUBLE PRECISION);
)sql",
    // 4 -> 5: SM, tensor and DRAM activity in integer GPU-µs, its quality ('none' when no
    // source gave it) and rule, and where a declared share came from; older rows: 0, 'none', ''.
    R"sql(
ALTER TABLE usage_hours
  ADD COLUMN sm_active_us     BIGINT           NOT NULL DEFAULT 0,
  ADD COLUMN sm_occupancy_us  BIGINT           NOT NULL DEFAULT 0,
  ADD COLUMN tensor_active_us BIGINT           NOT NULL DEFAULT 0,
  ADD COLUMN dram_active_us   BIGINT           NOT NULL DEFAULT 0,
  ADD COLUMN activity_quality TEXT COLLATE "C" NOT NULL DEFAULT 'none',
  ADD COLUMN activity_rule    TEXT COLLATE "C" NOT NULL DEFAULT '',
  ADD COLUMN share_source     TEXT COLLATE "C" NOT NULL DEFAULT '';
)sql",
    // 5 -> 6: guardrail findings, one row per Finding::Key(); the key's index serves
    // time-range reads, a partial index the open findings of a node. resolved_us is NULL while
    // the finding is open.
    R"sql(
CREATE TABLE findings (
  first_seen_us BIGINT           NOT NULL,
  node          TEXT COLLATE "C" NOT NULL,
  kind          TEXT COLLATE "C" NOT NULL,
  namespace     TEXT COLLATE "C" NOT NULL,
  pod           TEXT COLLATE "C" NOT NULL,
  pod_uid       TEXT COLLATE "C" NOT NULL,
  container     TEXT COLLATE "C" NOT NULL,
  gpu_uuid      TEXT COLLATE "C" NOT NULL,
  cluster       TEXT COLLATE "C" NOT NULL,
  severity      TEXT COLLATE "C" NOT NULL,
  evidence      TEXT COLLATE "C" NOT NULL,
  last_seen_us  BIGINT           NOT NULL,
  resolved_us   BIGINT,
  PRIMARY KEY (first_seen_us, node, kind, namespace, pod, pod_uid, container, gpu_uuid, cluster)
);
CREATE INDEX findings_open_by_node ON findings (cluster, node) WHERE resolved_us IS NULL;
)sql",
    // 6 -> 7: the hour's rightsizing histogram counts (store/row_codec.h EncodeHistogram);
    // rows written before have none: ''.
    R"sql(
ALTER TABLE usage_hours ADD COLUMN histogram TEXT COLLATE "C" NOT NULL DEFAULT '';
)sql",
    // 7 -> 8 converts the rows in code (MigrateToCompactHours).
    "",
    // 8 -> 9: the hours each of the last writes touched, by the generation it made (a reader
    // that keeps a copy reloads only those: LedgerStore::ChangesSince).
    R"sql(
CREATE TABLE ledger_changes (
  generation BIGINT PRIMARY KEY,
  from_us    BIGINT NOT NULL,
  to_us      BIGINT NOT NULL
);
)sql",
    // 9 -> 10 adds placements.layout in code (MigrateToPlacementLayouts).
    "",
    // 10 -> 11 moves labels into the consumers dictionary in code (MigrateToConsumerLabels).
    "",
    // 11 -> 12: closed statements, as the SQLite ledger's.
    R"sql(
CREATE TABLE statements (
  period           TEXT COLLATE "C" NOT NULL,
  policy           TEXT COLLATE "C" NOT NULL,
  idle             TEXT COLLATE "C" NOT NULL,
  version          BIGINT NOT NULL,
  from_us          BIGINT NOT NULL,
  to_us            BIGINT NOT NULL,
  closed_at_us     BIGINT NOT NULL,
  build            TEXT   NOT NULL,
  provenance       TEXT   NOT NULL,
  total_cost_nanos BIGINT NOT NULL,
  body             BYTEA  NOT NULL,
  PRIMARY KEY (period, policy, idle, version)
);
)sql",
    // 12 -> 13: days kept summed, as the SQLite ledger's.
    R"sql(
CREATE TABLE day_rollups (
  day_us BIGINT NOT NULL,
  kind   TEXT COLLATE "C" NOT NULL,
  body   BYTEA NOT NULL,
  PRIMARY KEY (day_us, kind)
);
)sql",
    // 13 -> 14: token hours, as the SQLite ledger's.
    R"sql(
CREATE TABLE token_hours (
  hour_us       BIGINT           NOT NULL,
  cluster       TEXT COLLATE "C" NOT NULL,
  namespace     TEXT COLLATE "C" NOT NULL,
  pod           TEXT COLLATE "C" NOT NULL,
  pod_uid       TEXT COLLATE "C" NOT NULL,
  container     TEXT COLLATE "C" NOT NULL,
  model         TEXT COLLATE "C" NOT NULL,
  engine        TEXT COLLATE "C" NOT NULL,
  input_tokens  BIGINT           NOT NULL,
  output_tokens BIGINT           NOT NULL,
  requests      BIGINT           NOT NULL,
  prefill_us    BIGINT           NOT NULL,
  decode_us     BIGINT           NOT NULL,
  PRIMARY KEY (hour_us, cluster, namespace, pod, pod_uid, container, model, engine)
);
)sql",
    kMoveIngestStateUnderItsCluster,  // 14 -> 15
};

constexpr std::string_view kCreateMeta =
    "CREATE TABLE IF NOT EXISTS meta (key TEXT COLLATE \"C\" PRIMARY KEY, "
    "value TEXT COLLATE \"C\" NOT NULL)";

// The schema version recorded in the database; 0 for a new one.
Result<std::int64_t> ReadSchemaVersion(PgConn& conn) {
  auto has_meta = conn.Exec("read schema", "SELECT to_regclass('meta') IS NOT NULL");
  if (!has_meta) return has_meta.error();
  if (has_meta->rows() != 1 || has_meta->View(0, 0) != "t") return std::int64_t{0};
  auto r = conn.Exec("read schema_version", "SELECT value FROM meta WHERE key = 'schema_version'");
  if (!r) return r.error();
  if (r->rows() == 0) return std::int64_t{0};
  std::int64_t version = 0;
  if (!r->Int(0, 0, version)) {
    return Internal(
        fmt::format("{}: meta schema_version '{}' is not a number", conn.server(), r->Text(0, 0)));
  }
  return version;
}

// A schema-7 table through a cursor over it.
template <typename Row>
class PgLegacyRows final : public LegacyRows<Row> {
 public:
  PgLegacyRows(PgCursor cursor, std::string_view table, std::string errors_name)
      : cursor_(std::move(cursor)), table_(table), errors_name_(std::move(errors_name)) {}
  Result<bool> Next(Row& row) override {
    auto next = cursor_.Next();
    if (!next) return next.error();
    if (*next == nullptr) return false;
    PgRow& q = **next;
    std::string what;
    bool decoded = false;
    if constexpr (std::is_same_v<Row, DeviceHour>) {
      decoded = DecodeDeviceHour(q, row, &what);
    } else {
      decoded = DecodeUsageRow(q, row, &what);
    }
    if (q.bad_col() >= 0) what = fmt::format("column {} does not hold a number", q.bad_col());
    if (decoded && q.bad_col() < 0) return true;
    return Internal(fmt::format("{}: migrate schema 7 -> 8: {} row (hour_us {}, gpu {}): {}",
                                errors_name_, table_, row.hour_us, row.gpu.str(), what));
  }

 private:
  PgCursor cursor_;
  std::string_view table_;
  std::string errors_name_;
};

// 7 -> 8 (issue 37), as the SQLite ledger's (sqlite_schema.cc): the hours move to the compact
// tables, the old tables go; a database that cannot move fails the migration's transaction.
Status MigrateToCompactHours(PgConn& conn) {
  if (auto r = conn.Exec("migrate schema 7 -> 8: create", CompactTablesSql(kPostgresDialect)); !r)
    return r.status();
  auto devices = PgCursor::Open(
      conn, "legacy_devices", "migrate schema 7 -> 8: read device_hours",
      fmt::format("SELECT {} FROM device_hours ORDER BY hour_us, gpu_uuid", kDeviceColumns));
  if (!devices) return devices.status();
  auto usage = PgCursor::Open(conn, "legacy_usage", "migrate schema 7 -> 8: read usage_hours",
                              fmt::format("SELECT {} FROM usage_hours ORDER BY hour_us, gpu_uuid, "
                                          "namespace, pod, container, pod_uid",
                                          kUsageColumns));
  if (!usage) return usage.status();
  PgLegacyRows<DeviceHour> device_rows(std::move(*devices), "device_hours", conn.server());
  PgLegacyRows<UsageRow> usage_rows(std::move(*usage), "usage_hours", conn.server());
  PgConnection connection(conn, /*in_transaction=*/true);
  if (Status s = MoveToCompactHours(device_rows, usage_rows, connection); !s) return s;
  auto dropped = conn.Exec("migrate schema 7 -> 8: drop the old tables",
                           "DROP TABLE usage_hours; DROP TABLE device_hours;");
  return dropped ? Status::Ok() : dropped.status();
}

// Whether `table` of the connection's schema has `column` (a migration that adds it may find it
// made already by the 7 -> 8 step of this build).
Result<bool> HasColumn(PgConn& conn, const std::string& what, std::string_view table,
                       std::string_view column) {
  PgParams p;
  p.Add(std::string(table));
  p.Add(std::string(column));
  auto has = conn.Exec(what,
                       "SELECT count(*) FROM information_schema.columns WHERE table_schema = "
                       "current_schema() AND table_name = $1 AND column_name = $2",
                       p);
  if (!has) return has.status();
  std::int64_t columns = 0;
  return has->rows() == 1 && has->Int(0, 0, columns) && columns > 0;
}

// Drops `table`'s one UNIQUE constraint, whose name is PostgreSQL's choice (looked up), so a
// migration can key the table anew.
std::string DropUniqueConstraintSql(std::string_view table) {
  return fmt::format(R"sql(
DO $$
DECLARE unique_key text;
BEGIN
  SELECT conname INTO STRICT unique_key FROM pg_constraint
    WHERE conrelid = '{0}'::regclass AND contype = 'u';
  EXECUTE format('ALTER TABLE {0} DROP CONSTRAINT %I', unique_key);
END $$;
)sql",
                     table);
}

// 9 -> 10, as the SQLite ledger's (sqlite_schema.cc): placements gain `layout`, part of their
// key, unless the 7 -> 8 step of this build made them with it; here by adding the column and
// replacing the table's one UNIQUE constraint (its name is PostgreSQL's choice: looked up).
Status MigrateToPlacementLayouts(PgConn& conn) {
  const std::string what = "migrate schema 9 -> 10";
  auto has = HasColumn(conn, what, "placements", "layout");
  if (!has) return has.status();
  if (*has) return Status::Ok();
  auto added = conn.Exec(what, R"sql(
ALTER TABLE placements ADD COLUMN layout TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE placements ALTER COLUMN layout DROP DEFAULT;
)sql" + DropUniqueConstraintSql("placements") +
                                   R"sql(
ALTER TABLE placements
  ADD UNIQUE (cluster, node, gpu_model, sharing_mode, pricing_class, layout);
)sql");
  return added ? Status::Ok() : added.status();
}

// 10 -> 11, as the SQLite ledger's (sqlite_schema.cc): consumers gain their labels, keyed by
// their digests (kPostgresDialect), unless the 7 -> 8 step of this build made them with them;
// the side tables' sets go to the consumers of their pods.
Status MigrateToConsumerLabels(PgConn& conn) {
  const std::string what = "migrate schema 10 -> 11";
  auto has = HasColumn(conn, what, "consumers", "labels");
  if (!has) return has.status();
  if (!*has) {
    auto added = conn.Exec(what, R"sql(
ALTER TABLE consumers ADD COLUMN labels TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE consumers ADD COLUMN namespace_labels TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE consumers ALTER COLUMN labels DROP DEFAULT;
ALTER TABLE consumers ALTER COLUMN namespace_labels DROP DEFAULT;
)sql" + DropUniqueConstraintSql("consumers") +
                                     R"sql(
CREATE UNIQUE INDEX consumers_key ON consumers (namespace, pod, pod_uid, container, owner_kind,
  owner_name, md5(labels), md5(namespace_labels));
)sql");
    if (!added) return added.status();
  }
  PgConnection connection(conn, /*in_transaction=*/true);
  return MoveLabelsIntoConsumers(connection);
}

}  // namespace

Status MigratePostgresLedger(PgConn& conn) { return MigratePostgresLedgerTo(conn, kSchemaVersion); }

Status CheckPostgresLedgerCurrent(PgConn& conn) {
  auto version = ReadSchemaVersion(conn);
  if (!version) return version.status();
  if (*version == kSchemaVersion) return Status::Ok();
  if (*version > kSchemaVersion)
    return Unsupported(
        fmt::format("{}: ledger schema version {} is newer than this build supports ({})",
                    conn.server(), *version, kSchemaVersion));
  if (*version == 0)
    return NotFound(fmt::format(
        "{}: no ledger there yet (a read-only reader creates none: start a writer first)",
        conn.server()));
  return Unsupported(fmt::format(
      "{}: ledger schema version {} is older than this build's ({}): a writer of this build "
      "migrates it; a read-only reader does not",
      conn.server(), *version, kSchemaVersion));
}

Status MigratePostgresLedgerTo(PgConn& conn, std::int64_t target) {
  auto version = ReadSchemaVersion(conn);
  if (!version) return version.status();
  if (*version == target) return Status::Ok();
  if (*version > kSchemaVersion || *version < 0) {
    return Unsupported(
        fmt::format("{}: ledger schema version {} is newer than this build supports ({})",
                    conn.server(), *version, kSchemaVersion));
  }
  auto txn = PgTxn::Begin(conn);
  if (!txn) return txn.status();
  // Serialise migrators of this schema; re-read under the lock: another may
  // have finished.
  auto lock = conn.Exec("lock for migration",
                        "SELECT pg_advisory_xact_lock(hashtext('gpuledger-migrate:' || "
                        "coalesce(current_schema(), '')))");
  if (!lock) return lock.status();
  if (auto r = conn.Exec("create meta", std::string(kCreateMeta)); !r) return r.status();
  version = ReadSchemaVersion(conn);
  if (!version) return version.status();
  if (*version > kSchemaVersion) {
    return Unsupported(
        fmt::format("{}: ledger schema version {} is newer than this build supports ({})",
                    conn.server(), *version, kSchemaVersion));
  }
  for (std::int64_t v = *version; v < target; ++v) {
    if (v == 7 || v == 9 || v == 10) {
      Status s = v == 7   ? MigrateToCompactHours(conn)
                 : v == 9 ? MigrateToPlacementLayouts(conn)
                          : MigrateToConsumerLabels(conn);
      if (!s) return s;
      continue;
    }
    auto r = conn.Exec(fmt::format("migrate schema {} -> {}", v, v + 1),
                       std::string(kMigrations[static_cast<std::size_t>(v)]));
    if (!r) return r.status();
  }
  PgParams p;
  p.Add(std::to_string(target));
  auto r = conn.Exec("write schema_version",
                     "INSERT INTO meta (key, value) VALUES ('schema_version', $1) "
                     "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                     p);
  if (!r) return r.status();
  return txn->Commit();
}

}  // namespace gpuledger::store
