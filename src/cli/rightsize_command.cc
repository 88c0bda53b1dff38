#include "cli/rightsize_command.h"

#include <fmt/format.h>

#include "cli/exit_code.h"
#include "cli/open_ledger.h"
#include "cli/server_client.h"
#include "cost/catalog.h"
#include "io/terminal.h"
#include "ledger/rightsize.h"
#include "recommendations/rightsize_json.h"

namespace gpuledger::cli {
namespace {

// The rightsizing document, from the ledger or from the server's /api/v1/recommendations (the
// same bytes).
Result<std::string> RightsizeJson(const RightsizeOptions& o) {
  if (o.db.empty()) {  // --server, or through the API server (server_client.h)
    std::vector<std::pair<std::string, std::string>> params{
        {"window", o.window}, {"headroom", o.headroom}, {"percentile", o.percentile}};
    if (!o.namespace_name.empty()) params.emplace_back("namespace", o.namespace_name);
    if (!o.workload.empty()) params.emplace_back("workload", o.workload);
    return GetFromServer(o.Server(), "/api/v1/recommendations", params);
  }
  cost::Catalog catalog = cost::DefaultCatalog();
  if (!o.catalog.empty()) {
    auto loaded = cost::LoadCatalogFile(o.catalog, catalog);
    if (!loaded) return InvalidArgument(loaded.error().message);
    catalog = std::move(*loaded);
  }
  auto store = OpenExistingLedger("--db", o.db);
  if (!store) return store.error();
  auto answer = ledger::ReadRightsizePlan(
      **store, nullptr, o, catalog, [&] { return OpenExistingLedger("--db", o.db); });
  if (!answer) {
    if (answer.error().code == ErrorCode::kInvalidArgument)
      return InvalidArgument("--" + answer.error().message);
    return answer.error();
  }
  return recommendations::RightsizeToJson(*answer);
}

}  // namespace

int RunRightsize(const RightsizeOptions& o, std::ostream& out, std::ostream& err) {
  return PrintDocument(
      o.db, o.server, o.format, [&] { return RightsizeJson(o); },
      recommendations::RightsizeTableFromJson, out, err);
}

}  // namespace gpuledger::cli
