#pragma once
// The ledger store: one interface, SQLite (a file) and PostgreSQL (a server). Writes are
// idempotent: writing a LedgerHour replaces every row of that (hour, gpu), so a re-ingest replaces,
// never adds. Thread-compatible: one writer at a time.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/time_range.h"
#include "common/units.h"
#include "model/finding.h"
#include "model/ledger.h"
#include "model/reconciliation.h"
#include "model/statement.h"
#include "model/tokens.h"

namespace gpuledger::store {

// Which recorded guardrail findings ReadFindings returns; every set field must match.
struct FindingQuery {
  // Findings whose time [first_seen_us, resolved_us or else last_seen_us] (both ends included)
  // overlaps [from_us, to_us): first_seen_us < to_us and that end >= from_us.
  Micros from_us = 0;
  Micros to_us = INT64_MAX;
  std::optional<FindingKind> kind;
  std::string namespace_name;            // the subject's namespace; "" any
  std::optional<Severity> min_severity;  // that severity or a worse one
  bool open_only = false;                // only findings with no resolved_us
  std::string cluster;                   // "" any
  std::string node;                      // "" any (with open_only: one node's open findings)
};

// A range of the ledger read as a stream, for readers that keep a compact copy of their own
// (the read service, ledger/). LedgerStore::Scan calls, in this order and from one read
// snapshot: OnReconciliation for the days starting in the range; then hour by hour, the
// hour's OnDeviceHour in GPU order, then OnUsage for its rows, each with the labels in force
// when it was written. A failed callback stops the scan and Scan returns its error. The rows
// passed are valid only during the call.
class LedgerScan {
 public:
  virtual ~LedgerScan() = default;
  virtual Status OnReconciliation(const Reconciliation& reconciliation) = 0;
  virtual Status OnDeviceHour(const DeviceHour& device) = 0;
  virtual Status OnUsage(const UsageRow& usage) = 0;

  // Rows by key, for a reader that keeps strings once (the snapshot): a scan whose ByKey() is
  // true gets OnKeyedDeviceHour and OnKeyedUsage in place of OnDeviceHour and OnUsage, in the
  // same order. Each row comes with its figures (a device-hour's hour_us and figures; a usage
  // row's hour_us, figures, activity and histogram), its strings unset, and keys that stand for
  // its strings: one key for each distinct set of strings of its kind, the same in every scan
  // of the ledger (the dictionaries' ids, never reused). A key's strings come once, before
  // the first row naming it: a GPU's UUID; a placement's cluster, node, gpu_model, sharing,
  // pricing_class and price_state; a consumer's ref, owner and labels; a context's node,
  // gpu_model, sharing, device_id, qualities and rules.
  virtual bool ByKey() const { return false; }
  virtual Status OnGpuKey(std::int64_t /*key*/, const GpuUuid& /*gpu*/) { return NotByKey(); }
  virtual Status OnPlacementKey(std::int64_t /*key*/, const DeviceHour& /*placement*/) {
    return NotByKey();
  }
  virtual Status OnConsumerKey(std::int64_t /*key*/, const ConsumerInfo& /*consumer*/) {
    return NotByKey();
  }
  virtual Status OnContextKey(std::int64_t /*key*/, const UsageRow& /*context*/) {
    return NotByKey();
  }
  virtual Status OnKeyedDeviceHour(const DeviceHour& /*figures*/, std::int64_t /*gpu_key*/,
                                   std::int64_t /*placement_key*/) {
    return NotByKey();
  }
  virtual Status OnKeyedUsage(const UsageRow& /*figures*/, std::int64_t /*gpu_key*/,
                              std::int64_t /*consumer_key*/, std::int64_t /*context_key*/) {
    return NotByKey();
  }

 private:
  static Status NotByKey() { return Internal("a scan that takes no rows by key was sent one"); }
};

// What changed in a ledger since a generation (LedgerStore::ChangesSince).
struct LedgerChanges {
  std::int64_t generation = 0;  // the ledger's generation now
  // The hull of the hours the writes after the asked-for generation touched (device-hours,
  // usage rows with their labels, reconciled node-days): outside it every row reads as it did
  // then. Empty
  // ({0, 0}) when nothing was written since.
  TimeRange touched{0, 0};
  TimeRange extent{0, 0};  // Extent() now
};

class LedgerStore {
 public:
  virtual ~LedgerStore() = default;

  // Writes all hours in one transaction; each replaces its (hour, gpu) rows entirely. On any
  // failure nothing of the span is kept. Each row keeps its ConsumerInfo's pod and namespace
  // labels as they are (the labels in force in its hour): a later relabel changes the rows
  // written after it, never the ones before.
  virtual Status WriteHours(std::span<const LedgerHour> hours) = 0;

  virtual Result<std::vector<DeviceHour>> ReadDeviceHours(const TimeRange& range) = 0;
  // Usage rows with their consumer info (owner, pod labels, namespace labels, as written).
  virtual Result<std::vector<UsageRow>> ReadUsage(const TimeRange& range) = 0;
  // Everything of `range` a report needs, streamed from one read snapshot (LedgerScan).
  virtual Status Scan(const TimeRange& range, LedgerScan& scan) = 0;
  // A number that changes with every committed write of hours or reconciliations (0 before
  // the first): a reader that keeps a copy (ledger/read_service.h) knows when it is stale.
  virtual Result<std::int64_t> Generation() = 0;
  // What the committed writes after `generation` (a value Generation() returned) touched, read
  // in one snapshot with the generation and extent it reports. nullopt when the store cannot say:
  // it keeps the last kChangeLogLength writes' hours, and none from before it started to; a reader
  // then reads whole again.
  virtual Result<std::optional<LedgerChanges>> ChangesSince(std::int64_t generation) {
    (void)generation;
    return std::optional<LedgerChanges>();
  }
  static constexpr std::int64_t kChangeLogLength = 1024;
  // [first hour, last hour + 1h) over everything stored; nullopt-like {0,0} when empty.
  virtual Result<TimeRange> Extent() = 0;

  // Key/value facts about the ledger (cluster name, currency, simulator seed, ...). ReadMeta
  // includes "schema_version", which the store owns: PutMeta refuses that key.
  virtual Status PutMeta(const std::string& key, const std::string& value) = 0;
  virtual Result<std::map<std::string, std::string>> ReadMeta() = 0;
  // Sets (a value) and erases (nullopt) meta keys in one transaction: on any failure none
  // changes. For state kept in parts (the ingest engine's, one key per agent and open hour),
  // so a commit writes only what changed and the parts never disagree with each other.
  virtual Status UpdateMeta(const std::map<std::string, std::optional<std::string>>& changes) = 0;

  // Bill reconciliations (one per node and UTC day), written in one transaction: each replaces
  // the one of its (node, day_us), so re-importing a bill is idempotent. On any failure nothing
  // of the span is kept. A store that cannot hold them says kUnsupported.
  virtual Status WriteReconciliations(std::span<const Reconciliation> reconciliations) {
    (void)reconciliations;
    return Unsupported("this ledger store cannot record bill reconciliations");
  }
  // Reconciliations whose day starts in [from_us, to_us), ordered by (day_us, node). A store
  // that cannot hold them has none.
  virtual Result<std::vector<Reconciliation>> ReadReconciliations(const TimeRange& range) {
    (void)range;
    return std::vector<Reconciliation>{};
  }

  // Guardrail findings, written in one transaction: each upserts the finding of its Key()
  // (cluster, node, kind, subject, gpu_uuid, first_seen_us), replacing severity, evidence,
  // last_seen_us and resolved_us, so re-writing is idempotent; within one span the last of a
  // key wins. On any failure nothing of the span is kept. kInvalidArgument, before anything is
  // written, for a finding that ends before it starts (last_seen_us or resolved_us before
  // first_seen_us). A store that cannot hold them says kUnsupported.
  virtual Status WriteFindings(std::span<const Finding> findings) {
    (void)findings;
    return Unsupported("this ledger store cannot record guardrail findings");
  }
  // Closed statements (issue 38). WriteStatement adds `statement` as the next version of its
  // (period, policy, idle), in one transaction, and returns that version; nothing else of the
  // ledger changes. A store that cannot hold them says kUnsupported.
  virtual Result<int> WriteStatement(const Statement& statement) {
    (void)statement;
    return Unsupported("this ledger store cannot record closed statements");
  }
  // The statements of `period` ("" every period), ordered by period, policy, idle, version,
  // without their bodies. A store that cannot hold them has none.
  virtual Result<std::vector<Statement>> ReadStatements(const std::string& period) {
    (void)period;
    return std::vector<Statement>{};
  }
  // The body of the statement `heading` names (its period, policy, idle and version): one
  // version's bytes, never the others'. kInternal when there is no such statement.
  virtual Result<std::string> ReadStatementBody(const Statement& heading) {
    (void)heading;
    return Unsupported("this ledger store cannot record closed statements");
  }

  // Days kept summed (ledger/day_rollup.h): a day's report at its finest grain for one `kind`
  // (the format, policy and idle handling it was summed for), so a later report reads it rather
  // than the day's rows. Every write of hours or reconciliations drops the kept days it touches,
  // in its own transaction: one that is there is the day as it stands. The day starting at
  // `day_us` kept as `kind`, or nullopt. A store that cannot keep them has none.
  virtual Result<std::optional<std::string>> ReadDayRollup(Micros day_us, std::string_view kind) {
    (void)day_us;
    (void)kind;
    return std::optional<std::string>();
  }
  // The days starting in `range` kept summed as `kind`, in order (what a keeper need not sum).
  virtual Result<std::vector<Micros>> KeptDays(std::string_view kind, const TimeRange& range) {
    (void)kind;
    (void)range;
    return std::vector<Micros>{};
  }
  // Keeps `body` as the day `day_us` summed as `kind` (replacing one kept before) when nothing
  // was written since the ledger stood at `generation` (Generation() before the day was read),
  // and returns true; else keeps nothing and returns false, as a store that cannot keep them.
  virtual Result<bool> WriteDayRollup(Micros day_us, std::string_view kind, std::int64_t generation,
                                      std::string_view body) {
    (void)day_us;
    (void)kind;
    (void)generation;
    (void)body;
    return false;
  }

  // What inference engines served (model/tokens.h), in one transaction: each row replaces the
  // one of its Key(), so re-writing an hour is idempotent; within one span the last of a key
  // wins. kInvalidArgument, before anything is written, for a negative figure. Token hours are
  // no part of the device-hours reports read: writing them leaves Generation() as it was. A
  // store that cannot hold them says kUnsupported.
  virtual Status WriteTokenHours(std::span<const TokenHour> rows) {
    (void)rows;
    return Unsupported("this ledger store cannot record token hours");
  }
  // The token hours that start in `range`, in Key() order. A store that cannot hold them has
  // none.
  virtual Result<std::vector<TokenHour>> ReadTokenHours(const TimeRange& range) {
    (void)range;
    return std::vector<TokenHour>{};
  }

  // The findings `query` selects, ordered as Finding's fields compare: (first_seen_us, node,
  // kind in FindingKind order, subject in ConsumerRef order, gpu_uuid, cluster). A store that
  // cannot hold them has none.
  virtual Result<std::vector<Finding>> ReadFindings(const FindingQuery& query) {
    (void)query;
    return std::vector<Finding>{};
  }
};

// Opens one more connection to the same ledger (a pool, a reader working in parallel).
using StoreOpener = std::function<Result<std::unique_ptr<LedgerStore>>()>;

struct SqliteLedgerOptions {
  // Opens the file read-only (a reporting process beside the writer): writes fail with the path,
  // and the schema must already be current (nothing is migrated).
  bool read_only = false;
  // How long a statement waits for another connection's lock before failing with kUnavailable.
  int busy_timeout_ms = 5000;
};

// Opens (creating if needed) an SQLite ledger file in WAL mode; migrates the schema. Fails with
// the path and the reason for a missing directory, a file that is not an SQLite database, or a
// schema newer than this build knows.
Result<std::unique_ptr<LedgerStore>> OpenSqliteLedger(const std::string& path);
Result<std::unique_ptr<LedgerStore>> OpenSqliteLedger(const std::string& path,
                                                      const SqliteLedgerOptions& options);

// Connects to a PostgreSQL ledger (postgres://USER:PASSWORD@HOST:PORT/DB?..., or libpq's
// key=value form) and creates or migrates its schema in the first schema of the connection's
// search_path (?options=-csearch_path%3DNAME picks one). Same semantics and read order as the
// SQLite ledger. Errors name the server as postgres://USER@HOST:PORT/DB, never the password;
// an unreachable server or a lost connection is kUnavailable, and the next call reconnects.
Result<std::unique_ptr<LedgerStore>> OpenPostgresLedger(const std::string& url);
struct PostgresLedgerOptions {
  // Every transaction read-only (writes fail in the server), and the schema must already be
  // this build's: nothing is created or migrated (CheckPostgresLedgerCurrent).
  bool read_only = false;
};
Result<std::unique_ptr<LedgerStore>> OpenPostgresLedger(const std::string& url,
                                                        const PostgresLedgerOptions& options);

// A ledger spec as users write it: "postgres://..." or "postgresql://..." is a PostgreSQL
// server; "sqlite:PATH" or a plain PATH is an SQLite file.
bool IsPostgresLedgerSpec(std::string_view spec);
// The file an SQLite spec names ("sqlite:PATH" -> PATH; a plain path as is).
std::string SqliteLedgerPath(std::string_view spec);
// The spec as it may be printed: a PostgreSQL URL without its password.
std::string DisplayLedgerSpec(std::string_view spec);
// Opens the ledger a spec names (OpenSqliteLedger or OpenPostgresLedger).
Result<std::unique_ptr<LedgerStore>> OpenLedger(const std::string& spec);
// The same for a reader that never writes: opened read-only, nothing created or migrated.
Result<std::unique_ptr<LedgerStore>> OpenLedgerReadOnly(const std::string& spec);

}  // namespace gpuledger::store
