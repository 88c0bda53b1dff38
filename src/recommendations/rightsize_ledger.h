#pragma once
// The rightsizing plan of a ledger window, as `gpuledger rightsize --db` and
// /api/v1/recommendations ask for it: the query as the user typed it, validated once here,
// the window's priced device-hours and usage read, the candidate models from the catalog.

#include <cstddef>
#include <string>

#include "common/result.h"
#include "common/time_range.h"
#include "cost/catalog.h"
#include "recommendations/rightsize_plan.h"
#include "store/ledger_store.h"

namespace gpuledger::recommendations {

struct RightsizeQuery {
  std::string window = "7d";
  std::string namespace_name;      // "" all
  std::string workload;            // "" all, else "ns/Kind/name"
  std::string headroom = "1.2";    // memory room above the peak, 1.0-4.0
  std::string percentile = "p95";  // p50, p95 or p99 of the compute share
  std::size_t max_usage_rows = 0;  // 0: no limit (billing::ReadUsageAtMost)
};

struct RightsizeAnswer {
  RightsizePlan plan;
  TimeRange window;
  double headroom = 1.2;
  std::string percentile;
};

// Errors of the query name the parameter first ("window: ...", "headroom: expected ...",
// "percentile: ...", "workload: ..."): the CLI adds "--", the API "parameter '...'". Store
// failures pass through.
Result<RightsizeAnswer> ReadRightsizePlan(store::LedgerStore& store, const RightsizeQuery& query,
                                          const cost::Catalog& catalog);

}  // namespace gpuledger::recommendations
