#pragma once
// `gpuledger server`: serves a ledger's REST API. Ingestion (--source scrape|prometheus|files)
// is not in this version yet: the server answers from the ledger it is given.

#include <atomic>
#include <ostream>
#include <string>

namespace gpuledger::cli {

struct ServerOptions {
  std::string source;      // must be empty in this version
  std::string ledger;      // "sqlite:PATH" or a path
  std::string listen = "0.0.0.0:8080";
  std::string token_file;
  std::string catalog;
};

int RunServer(const ServerOptions& options, const std::atomic<bool>& stop, std::ostream& out,
              std::ostream& err);

// Serves `db` until `stop`; prints the URL. Used by `server` and `demo`. If `listen`'s port is
// taken and `fallback_any_port`, a free port is used instead.
int ServeLedger(const std::string& db, const std::string& listen, const std::string& token,
                bool fallback_any_port, const std::atomic<bool>& stop, std::ostream& out,
                std::ostream& err);

}  // namespace gpuledger::cli
