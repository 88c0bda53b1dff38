#pragma once
// What a token cost, read from a ledger (issue 63, docs/tokens.md): `gpuledger tokens --db` and
// /api/v1/tokens ask the same request here. The window's report by entry (every consumer's
// figures under the policy and idle handling, as every report reads them: closed months from
// their statements) joined with the window's token hours (report/token_costs.h).

#include <string>

#include "common/result.h"
#include "ledger/read_service.h"
#include "ledger/report_request.h"
#include "report/token_costs.h"
#include "store/ledger_store.h"

namespace gpuledger::ledger {

struct TokenRequest {
  std::string window = "all";  // report::ResolveWindow's forms
  std::string group_by = "model";
  std::string policy = "allocation";
  std::string idle = "keep";
};

struct TokenAnswer {
  report::TokenReport report;
  ReadScope scope;  // the window resolved, the ledger's cluster and currency
};

// kInvalidArgument "<field name>: ..." for a bad field (FieldNames: the edge's names); store
// failures pass through. `reads` (the server's) answers the report; without one, a read service
// that keeps nothing between queries does, as for the CLI.
Result<TokenAnswer> ReadTokens(store::LedgerStore& store, ReadService* reads,
                               const TokenRequest& request, const FieldNames& names = {});

}  // namespace gpuledger::ledger
