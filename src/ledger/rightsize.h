#pragma once
// The rightsizing plan of a ledger window, as `gpuledger rightsize --db` and
// /api/v1/recommendations ask for it: the query as the user typed it, validated once here;
// the window's rows streamed a day at a time into each workload's figures (workload_hours.h:
// no row is held, so a month at 10,000 GPUs costs its workloads' memory, not its rows'), its
// report by workload for the prices, the candidate models from the catalog.

#include <cstddef>
#include <string>

#include "common/result.h"
#include "common/time_range.h"
#include "cost/catalog.h"
#include "ledger/read_service.h"
#include "recommendations/rightsize_plan.h"
#include "store/ledger_store.h"

namespace gpuledger::ledger {

// Errors of the query name the parameter first ("window: ...", "headroom: expected ...",
// "percentile: ...", "workload: ..."): the CLI adds "--", the API "parameter '...'". Store
// failures pass through. `reads` (the server's) answers the report by workload; without one, a
// read service that keeps nothing between queries does (ledger::OneQueryOptions), as for the CLI.
// With `open_more`, a window of two days or more is read in two halves at once, the later on a
// connection it opens (none opened: one).
Result<recommendations::RightsizeAnswer> ReadRightsizePlan(
    store::LedgerStore& store, ledger::ReadService* reads,
    const recommendations::RightsizeQuery& query, const cost::Catalog& catalog,
    const store::StoreOpener& open_more = {});

}  // namespace gpuledger::ledger
