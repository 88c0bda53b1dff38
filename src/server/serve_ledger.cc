#include "server/serve_ledger.h"

#include <chrono>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "server/http_server.h"
#include "store/ledger_store.h"

namespace gpuledger::server {

StoreOpener ReadConnections(const std::string& db) {
  return [db]() -> Result<std::unique_ptr<store::LedgerStore>> {
    if (store::IsPostgresLedgerSpec(db)) return store::OpenLedger(db);
    return store::OpenSqliteLedger(store::SqliteLedgerPath(db), {.read_only = true});
  };
}

Status ServeLedger(ServeLedgerOptions options, const std::atomic<bool>& stop, std::ostream& out,
                   std::ostream& err) {
  auto store = store::OpenLedger(options.db);
  if (!store) return store.error();
  // `store` (opened read-write, so the schema is current) stays open while serving: a
  // read-only SQLite connection needs the WAL files a writer keeps. The API reads through its
  // own connections, one per concurrent request, so a long report holds up no probe.
  Api api(ReadConnections(options.db), options.token, options.policy, options.catalog);
  if (options.extra_metrics) api.AddMetrics(std::move(options.extra_metrics));
  auto http = HttpServer::Bind(options.listen, api);
  if (!http && options.fallback_any_port) {
    auto colon = options.listen.rfind(':');
    http = HttpServer::Bind(options.listen.substr(0, colon) + ":0", api);
  }
  if (!http) return http.error();
  const std::string& bound = (*http)->host();
  if (options.token.empty() && !bound.starts_with("127.") && bound != "::1")
    err << fmt::format(
        "warning: the API serves {}:{} without a token: anyone who can reach this port reads "
        "every namespace's costs and findings; give --token-file, or --listen "
        "127.0.0.1:PORT to serve this host alone\n",
        bound, (*http)->port());
  const std::string host = bound == "0.0.0.0" ? "127.0.0.1" : bound;
  const std::string base = fmt::format("http://{}:{}", host, (*http)->port());
  out << fmt::format(
      "serving {} at {}/  (the web UI there, docs/ui.md; the REST API at {}/api/v1/, "
      "docs/api.md; Ctrl-C stops)\n",
      store::DisplayLedgerSpec(options.db), base, base);
  out.flush();
  std::thread serve([&] { (*http)->Serve(); });
  while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  (*http)->Stop();
  serve.join();
  return Status::Ok();
}

}  // namespace gpuledger::server
