#pragma once
// `gpuledger rightsize`: per workload the action that saves the most (fewer GPUs, a MIG
// profile, a time-slice share, a cheaper model) with its monthly saving, the consolidation
// plans, and the total, from a ledger or a running server (docs/rightsizing.md).

#include <ostream>
#include <string>

#include "cli/server_client.h"

namespace gpuledger::cli {

struct RightsizeOptions {
  std::string db;
  std::string server;  // http://host:port of a running `gpuledger server`, instead of --db
  http::ClientAuth server_auth;  // credentials and trust for --server
  KubeRoute kube;                // neither --db nor --server: through the API server
  std::string catalog;  // prices of the models a workload could move to; built-in when empty
  std::string window = "7d";
  std::string namespace_name;
  std::string workload;  // NAMESPACE/KIND/NAME
  std::string headroom = "1.2";
  std::string percentile = "p95";
  std::string format = "table";  // table | json
};

// Returns the process exit code: 0 ok, 1 failure, 2 bad input.
int RunRightsize(const RightsizeOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gpuledger::cli
