#pragma once
// `gpuledger tokens`: what a million tokens cost, per model (or namespace, team, workload),
// from the GPU cost the serving pods truly used and the engines' own token counts
// (docs/tokens.md), from a ledger or a running server.

#include <ostream>
#include <string>

#include "cli/server_client.h"
#include "ledger/tokens.h"

namespace gpuledger::cli {

struct TokensOptions : ReadFrom, ledger::TokenRequest {
  std::string format = "table";  // table | json
};

// Returns the process exit code: 0 ok, 1 failure, 2 bad input.
int RunTokens(const TokensOptions& options, std::ostream& out, std::ostream& err);

// The table of a tokens document (report/token_json.h), in `columns` of a terminal.
Result<std::string> TokensTableFromJson(const std::string& json, std::size_t columns);

}  // namespace gpuledger::cli
