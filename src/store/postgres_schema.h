#pragma once
// The PostgreSQL ledger's schema: the SQLite ledger's tables in PostgreSQL's dialect, as
// migrations from version 0, applied on open under an advisory lock.

#include "common/result.h"
#include "store/postgres_db.h"
#include "store/sqlite_schema.h"

namespace gpuledger::store {

// Migrates the database (the connection's first search_path schema) to kSchemaVersion; two
// servers opening it at once migrate it once.
Status MigratePostgresLedger(PgConn& conn);
// Migrates to `target` (<= kSchemaVersion): the schema an older build left, for tests that
// write a database as that build did.
Status MigratePostgresLedgerTo(PgConn& conn, std::int64_t target);

}  // namespace gpuledger::store
