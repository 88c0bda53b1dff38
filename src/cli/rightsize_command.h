#pragma once
// `gpuledger rightsize`: per workload the action that saves the most (fewer GPUs, a MIG
// profile, a time-slice share, a cheaper model) with its monthly saving, the consolidation
// plans, and the total, from a ledger or a running server (docs/rightsizing.md).

#include <ostream>
#include <string>

#include "cli/server_client.h"
#include "recommendations/rightsize_plan.h"

namespace gpuledger::cli {

// What to size (the window, the workloads, the headroom and percentile, as the API's), against
// which prices, and how to print it.
struct RightsizeOptions : ReadFrom, recommendations::RightsizeQuery {
  std::string catalog;  // prices of the models a workload could move to; built-in when empty
  std::string format = "table";  // table | json
};

// Returns the process exit code: 0 ok, 1 failure, 2 bad input.
int RunRightsize(const RightsizeOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gpuledger::cli
