#pragma once
// The rightsizing document of `gpuledger rightsize --format json` and /api/v1/recommendations
// (the same bytes; docs/rightsizing.md "The document"):
//   {"window": {"start", "end"}, "percentile": "p95", "headroom": 1.2,
//    "recommendations": [{"workload", "namespace", "pricing_class", "action", "gpu_model",
//        "current_gpu_model", "from", "to",
//        "monthly_saving_nanos", "gpus_held_ppd", "recommended_ppd", "gpu_hourly_price_nanos",
//        "memory_peak_bytes", "gpus_used", "current_hourly_nanos", "recommended_hourly_nanos",
//        "confidence", "reasons": [...], "replay", "evidence", "utilization", "compute_basis",
//        "memory_basis", "alternatives": [{"action", "gpu_model", "to", "monthly_saving_nanos",
//        "confidence", "replay"}]}],
//    where "replay" (null for keep) is {"hours", "misfit_hours", "memory_hours",
//    "compute_hours", "gpus_hours", "allowed_hours", "risky", "cost_before_nanos",
//    "cost_after_nanos"} (replay.h), and "evidence" (null but for release) is
//    {"finding_kind": "idle-allocation", "workload", "api": "/api/v1/findings?...&workload=...",
//    "cli": "gpuledger audit ... --workload ..."}: the guardrail findings that show the same
//    idle hours, each naming the workload,
//    "consolidation": [{"gpu_model", "pool", "gpus_now", "gpus_now_ppd", "gpus_after",
//        "monthly_saving_nanos", "moves": [{"workload", "to_gpu", "profile"}], "optimal",
//        "left_alone": [...], "reasons": [...]}],
//    "total_monthly_saving_nanos", "total_basis"}
// Money is integer nanos of the ledger's currency; a month is 730 hours.

#include <string>
#include <string_view>

#include "common/result.h"
#include "recommendations/rightsize_plan.h"

namespace gpuledger::recommendations {

std::string RightsizeToJson(const RightsizeAnswer& answer);

// The table `gpuledger rightsize` prints, from the document above (so a plan read from a
// server prints as one read from a file): the best action per workload with its saving, the
// consolidation plans, the total, within `columns` (a workload's name on a line of its own
// where the terminal is narrower than one line of it). kInvalidArgument for a document of
// another shape.
Result<std::string> RightsizeTableFromJson(std::string_view json, std::size_t columns = 100);

}  // namespace gpuledger::recommendations
