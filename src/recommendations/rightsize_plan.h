#pragma once
// What `gpuledger rightsize` and /api/v1/recommendations answer (issue 30): for every workload
// of a window its ranked actions (rightsizing::Recommend over its window summary), the
// consolidation plans per GPU model and pool (rightsizing::PlanConsolidation over the
// workloads that use little of their GPUs), and the month's total saving. Pure: ledger rows in,
// the plan out; reading the ledger and printing it are the edges' (ledger/rightsize.h,
// rightsize_json.h, cli/rightsize_command.h).
//
// The total never counts a GPU twice: a workload's own best action and a consolidation plan
// that moves it are alternatives. It is the larger of
//   (a) the sum of every workload's best action, and
//   (b) the sum of the plans plus the best actions of the workloads no plan moves,
// and `total_basis` says which. Sums are exact (int64 nanos, checked).
//
// Seam for the what-if replay (issue 59): WorkloadAdvice keeps its summary's demand series,
// which the replay runs against a proposed layout.

#include <map>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/time_range.h"
#include "cost/catalog.h"
#include "model/ledger.h"
#include "recommendations/window_summary.h"
#include "rightsizing/consolidation.h"
#include "rightsizing/recommend.h"

namespace gpuledger::recommendations {

struct RightsizeOptions {
  SummaryOptions summary;  // window, namespace, compute percentile, candidate models
  rightsizing::RightsizingOptions recommend;
  rightsizing::ConsolidationOptions consolidate;  // its headroom is `recommend`'s
  std::string workload;                           // only this one ("ns/Kind/name"); "" all
};

struct WorkloadAdvice {
  WorkloadSummary summary;
  std::vector<rightsizing::Recommendation> ranked;  // best first: ranked[0] is the advice
};

struct RightsizePlan {
  std::vector<WorkloadAdvice> workloads;  // by best saving, highest first, then by key
  // Plans that free money (at least one workload moved and a saving above zero), by saving.
  std::vector<rightsizing::ConsolidationPlan> consolidation;
  Nanos total_monthly_saving_nanos = 0;
  std::string total_basis;  // how the total was summed (see the top of this file)
};

// kInvalidArgument when `options.workload` names no workload of the window, or when the window
// is the report's error (sums past 64 bits).
Result<RightsizePlan> PlanRightsizing(std::vector<WorkloadSummary> summaries,
                                      const RightsizeOptions& options);
// The same over rows given whole (SummarizeWorkloads).
Result<RightsizePlan> PlanRightsizing(std::span<const DeviceHour> devices,
                                      std::span<const UsageRow> usage,
                                      const RightsizeOptions& options);

// Per pricing class, every catalog model whose memory is known (cost::GpuModelMemory) at its
// any-region price, cheapest first (ties by name): the cheaper-model candidates.
std::map<std::string, std::vector<rightsizing::ModelPrice>> ModelsByClass(
    const cost::Catalog& catalog);

// A rightsizing question as the user typed it (ledger/rightsize.h validates it) and its answer.
struct RightsizeQuery {
  std::string window = "7d";
  std::string namespace_name;      // "" all
  std::string workload;            // "" all, else "ns/Kind/name"
  std::string headroom = "1.2";    // memory room above the peak, 1.0-4.0
  std::string percentile = "p95";  // p50, p95 or p99 of the compute share
};

struct RightsizeAnswer {
  RightsizePlan plan;
  TimeRange window;
  double headroom = 1.2;
  std::string percentile;
};

// "8 GPUs", "1 GPU", "0.25 GPU": a share held, as the table and the JSON's "from" say it.
std::string FormatGpus(SharePpd ppd);

}  // namespace gpuledger::recommendations
