#pragma once
// `gpuledger audit`: the guardrail findings of a ledger (or a running server) with their
// evidence and cost (docs/guardrails.md).

#include <ostream>
#include <string>

#include "cli/server_client.h"

namespace gpuledger::cli {

struct AuditOptions : ReadFrom {
  std::string kind;          // empty: every kind
  std::string since = "7d";  // as `report --window`
  std::string namespace_name;
  std::string workload;  // "namespace/Kind/name": only its findings
  std::string severity;  // this one and worse; empty: all
  bool open_only = false;
  std::string policy;  // guardrail policy YAML (kinds off, label exemptions, idle thresholds)
  std::string format = "table";  // table | json
};

// Returns the process exit code: 0 ok, 1 failure, 2 bad input.
int RunAudit(const AuditOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gpuledger::cli
