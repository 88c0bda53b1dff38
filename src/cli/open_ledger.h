#pragma once
// The one way a command that reads a ledger opens it: the ledger must already exist. A missing
// SQLite file, or an empty one (which SQLite would take as a new database and the store would
// write its schema into), is the user's argument that is wrong: kInvalidArgument naming the flag.

#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"
#include "store/ledger_store.h"

namespace gpuledger::cli {

// `flag` names the option in messages ("--db"); `spec` is a ledger spec (store::OpenLedger).
// read_only: SQLite opened read-only (store::SqliteLedgerOptions), for commands that never write.
Result<std::unique_ptr<store::LedgerStore>> OpenExistingLedger(std::string_view flag,
                                                               const std::string& spec,
                                                               bool read_only = false);

// The flags of a command that reads a ledger or a server's copy of it (audit, rightsize): at
// most one of --db and --server (neither: through the API server, server_client.h), and
// --format table or json. Ok, or kInvalidArgument saying which is wrong.
Status CheckReadFlags(const std::string& db, const std::string& server, const std::string& format);

}  // namespace gpuledger::cli
