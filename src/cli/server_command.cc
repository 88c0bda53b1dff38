#include "cli/server_command.h"

#include <chrono>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "cli/report_command.h"
#include "common/file_util.h"
#include "cost/catalog.h"
#include "server/api.h"
#include "server/http_server.h"
#include "store/ledger_store.h"

namespace gpuledger::cli {

int ServeLedger(const std::string& db, const std::string& listen, const std::string& token,
                bool fallback_any_port, const std::atomic<bool>& stop, std::ostream& out,
                std::ostream& err) {
  auto store = store::OpenSqliteLedger(db);
  if (!store) {
    err << "error: " << store.error().message << "\n";
    return ExitCodeFor(store.error());
  }
  server::Api api(**store, token);
  auto http = server::HttpServer::Bind(listen, api);
  if (!http && fallback_any_port) {
    auto colon = listen.rfind(':');
    http = server::HttpServer::Bind(listen.substr(0, colon) + ":0", api);
  }
  if (!http) {
    err << "error: " << http.error().message << "\n";
    return ExitCodeFor(http.error());
  }
  const std::string host = (*http)->host() == "0.0.0.0" ? "127.0.0.1" : (*http)->host();
  out << fmt::format("serving {} at http://{}:{}/  (API: /api/v1/allocation, /api/v1/report, "
                     "/api/v1/devices; Ctrl-C stops)\n",
                     db, host, (*http)->port());
  out.flush();
  std::thread serve([&] { (*http)->Serve(); });
  while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  (*http)->Stop();
  serve.join();
  return 0;
}

int RunServer(const ServerOptions& o, const std::atomic<bool>& stop, std::ostream& out,
              std::ostream& err) {
  if (!o.source.empty()) {
    err << fmt::format(
        "error: --source '{}': ingestion (scrape, prometheus=URL, files=DIR) is not in this "
        "version yet; without --source the server serves an existing ledger\n",
        o.source);
    return 2;
  }
  std::string path = o.ledger.starts_with("sqlite:") ? o.ledger.substr(7) : o.ledger;
  if (o.ledger.starts_with("postgres://") || o.ledger.starts_with("postgresql://")) {
    err << "error: --ledger: PostgreSQL ledgers are not in this version yet; use sqlite:PATH\n";
    return 2;
  }
  if (path.empty() || !std::filesystem::exists(path)) {
    err << fmt::format("error: --ledger '{}': no such ledger file\n", o.ledger);
    return 2;
  }
  if (!o.catalog.empty()) {
    auto catalog = cost::LoadCatalogFile(o.catalog, cost::DefaultCatalog());
    if (!catalog) {
      err << "error: --catalog: " << catalog.error().message << "\n";
      return 2;
    }
  }
  std::string token;
  if (!o.token_file.empty()) {
    auto t = ReadFile(o.token_file);
    if (!t) {
      err << "error: --token-file: " << t.error().message << "\n";
      return 2;
    }
    token = *t;
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' '))
      token.pop_back();
    if (token.empty()) {
      err << "error: --token-file: the file is empty\n";
      return 2;
    }
  }
  return ServeLedger(path, o.listen, token, false, stop, out, err);
}

}  // namespace gpuledger::cli
