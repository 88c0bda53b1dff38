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
// For a reader that never writes (a read-only server, the API's connections): Ok when the
// database holds a ledger of this build's schema. A newer or an older one (a writer of this
// build migrates it, a reader does not) is kUnsupported, none at all kNotFound, each naming the
// server and the versions.
Status CheckPostgresLedgerCurrent(PgConn& conn);

}  // namespace gpuledger::store
