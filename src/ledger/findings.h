#pragma once
// The findings service over a ledger store: the one place guardrails meet storage. `gpuledger
// audit` and /api/v1/findings both call it; what it computes is in the pure functions of
// price_findings.h.
//
// A window's findings are the agents' findings recorded in the ledger (ingest/finding_ingest.h)
// that overlap it, and the idle allocations of its rows; label exemptions and kinds turned off
// by the policy are applied here (the agent knows no labels). Each is priced with the rows of
// the window: a finding's cost is what it cost within the window asked for. A finding is open
// when it was still seen in the ledger's last hour. The rows are read through the read service
// a day at a time, each kept as findings need it (finding_days.h): the days that ended are
// held so, and a month at 10,000 GPUs reads only its open days' rows.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/result.h"
#include "guardrails/policy.h"
#include "guardrails/price_findings.h"
#include "ledger/read_service.h"
#include "store/ledger_store.h"

namespace gpuledger::ledger {

struct FindingsQuery {
  std::string window = "7d";  // as `report --window` (report::ResolveWindow)
  std::optional<FindingKind> kind;
  std::string namespace_name;            // empty: all
  std::string workload;                  // "namespace/Kind/name" (Finding::workload); empty: all
  std::optional<Severity> min_severity;  // this one and worse
  bool open_only = false;
};

struct FindingsDocument {
  Micros from_us = 0, to_us = 0;  // the window, resolved
  std::string cluster;
  std::string currency = "USD";
  std::vector<guardrails::PricedFinding>
      findings;  // by first seen, then node, kind, subject, device
  Nanos total_cost_nanos = 0;
  GpuMicros total_gpu_us = 0;
  // Across every node of the cluster, per kind.
  struct KindTotal {
    std::int64_t findings = 0;
    std::int64_t open = 0;
    GpuMicros gpu_us = 0;
    Nanos cost_nanos = 0;
  };
  std::map<FindingKind, KindTotal> by_kind;
};

// Sums doc.findings into the document's totals and by_kind.
void SumTotals(FindingsDocument& doc);

// kInvalidArgument naming the parameter for a bad window; store errors as they are.
Result<FindingsDocument> ReadFindingsDocument(store::LedgerStore& store, ledger::ReadService& reads,
                                              const FindingsQuery& query,
                                              const guardrails::Policy& policy);

// {"window":{...},"cluster":...,"currency":...,"total_cost_nanos":int,"total_gpu_seconds":x,
//  "findings":[{"kind","remedy","workload","severity","state","cluster","node","namespace","pod","pod_uid",
//  "container","gpu_uuid","evidence":{key: value},"first_seen","last_seen","resolved",
//  "duration_seconds","gpu_seconds","cost_nanos":int,"cost_basis","summary"}],
//  "by_kind":{kind:{"findings","open","gpu_seconds","cost_nanos"}}} (docs/guardrails.md).
nlohmann::json FindingsObject(const FindingsDocument& document);

// Parses the filters as `audit` and /api/v1/findings take them: kind, severity ("info",
// "warning", "critical"). kInvalidArgument naming the parameter and what was expected.
Result<std::optional<FindingKind>> ParseKindFilter(std::string_view text);
Result<std::optional<Severity>> ParseSeverityFilter(std::string_view text);

}  // namespace gpuledger::ledger
