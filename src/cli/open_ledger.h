#pragma once
// The one way a command that reads a ledger opens it: the ledger must already exist. A missing
// SQLite file, or an empty one (which SQLite would take as a new database and the store would
// write its schema into), is the user's argument that is wrong: kInvalidArgument naming the flag.

#include <cstddef>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>

#include "common/result.h"
#include "store/ledger_store.h"

namespace gpuledger::cli {

// `flag` names the option in messages ("--db"); `spec` is a ledger spec (store::OpenLedger).
// read_only: opened read-only (store::OpenLedgerReadOnly), for commands that never write.
Result<std::unique_ptr<store::LedgerStore>> OpenExistingLedger(std::string_view flag,
                                                               const std::string& spec,
                                                               bool read_only = false);

// The flags of a command that reads a ledger or a server's copy of it (audit, rightsize): at
// most one of --db and --server (neither: through the API server, server_client.h), and
// --format table or json. Ok, or kInvalidArgument saying which is wrong.
Status CheckReadFlags(const std::string& db, const std::string& server, const std::string& format);

// A reading command whose answer is a JSON document (rightsize, tokens): checks its flags, gets
// the document (`document`: from the ledger or the server, the same bytes), and prints it as it
// is (--format json) or as `table` renders it in the terminal's columns. The exit code.
int PrintDocument(const std::string& db, const std::string& server, const std::string& format,
                  const std::function<Result<std::string>()>& document,
                  const std::function<Result<std::string>(const std::string&, std::size_t)>& table,
                  std::ostream& out, std::ostream& err);

}  // namespace gpuledger::cli
