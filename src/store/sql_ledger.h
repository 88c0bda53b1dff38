#pragma once
// The ledger store written once over a database connection (store/sql_connection.h): the
// SQLite ledger and the PostgreSQL one are this over their connections.

#include <memory>

#include "store/ledger_store.h"
#include "store/sql_connection.h"

namespace gpuledger::store {

// A LedgerStore over `connection`, whose schema is current.
std::unique_ptr<LedgerStore> MakeSqlLedger(std::unique_ptr<SqlConnection> connection);

}  // namespace gpuledger::store
