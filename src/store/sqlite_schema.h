#pragma once
// The SQLite ledger's schema: its tables as migrations from version 0, and opening a file as
// the ledger wants it (WAL, busy timeout) migrated to this build's version.

#include <cstdint>
#include <string_view>

#include "common/result.h"
#include "store/ledger_store.h"
#include "store/sqlite_db.h"

namespace gpuledger::store {

inline constexpr std::int64_t kSchemaVersion = 15;  // the PostgreSQL ledger's too
inline constexpr std::string_view kSchemaVersionKey = "schema_version";  // in `meta`
// Counts the transactions that changed what reports read (hours, reconciliations); in `meta`.
inline constexpr std::string_view kGenerationKey = "ledger_generation";
// 14 -> 15, both stores' SQL: the ingest state is each cluster's (issue 64: several clusters'
// servers write one ledger), so the keys an earlier build kept move under the cluster the
// ledger names (ingest::ClusterMetaKey).
inline constexpr std::string_view kMoveIngestStateUnderItsCluster = R"sql(
UPDATE meta
SET key = 'cluster/' || COALESCE((SELECT value FROM meta WHERE key = 'cluster'), 'default')
          || '/' || key
WHERE key IN ('ingest_state', 'token_state', 'prometheus_cursor')
   OR substr(key, 1, 13) = 'ingest_state/';
)sql";
// The meta keys the store owns and PutMeta/UpdateMeta refuse (the PostgreSQL ledger's too).
inline bool IsStoreOwnedMetaKey(std::string_view key) {
  return key == kSchemaVersionKey || key == kGenerationKey;
}

// Busy timeout, foreign keys off, and (read-write) WAL with synchronous=NORMAL.
// Refuses another program's database first (RefuseAnotherProgramsDatabase).
Status ConfigureSqliteLedger(SqliteDb& db, const SqliteLedgerOptions& options);
// kInvalidArgument when the file is another program's database (tables, none of a ledger's),
// before anything is written to it.
Status RefuseAnotherProgramsDatabase(SqliteDb& db);
// Migrates the file to kSchemaVersion under the write lock (read-only: only checks it is there).
Status MigrateSqliteLedger(SqliteDb& db, bool read_only);
// Migrates to `target` (<= kSchemaVersion): the schema an older build left, for tests that
// write a file as that build did.
Status MigrateSqliteLedgerTo(SqliteDb& db, bool read_only, std::int64_t target);

}  // namespace gpuledger::store
