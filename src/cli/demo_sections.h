#pragma once
// What `gpuledger demo` prints of the ledger it wrote, a section a function (demo_command.h
// runs them in order): every line fits `width` columns.

#include <cstddef>
#include <map>
#include <ostream>
#include <string>
#include <string_view>

#include "common/result.h"
#include "cost/catalog.h"
#include "cost/price_hours.h"
#include "model/ledger.h"
#include "report/report.h"
#include "sim/simulator.h"
#include "store/ledger_store.h"

namespace gpuledger::cli {

// How each node was priced (cost::ResolveNodePrice): by "node|model", the price and, a step a
// line, how (labels, table row, split).
void PrintNodePrices(const std::map<std::string, cost::NodePrice>& prices, std::size_t width,
                     std::ostream& out);

// The report's rows, idle, unattributed and total, with the per-device method's figures beside
// each row (report::Figures' naive_*: what /api/v1/report and the UI show, the same figures), in
// `width` columns: keys cut with "…" to fit, the per-device columns where there is room for them
// (the line under the table says their sum either way).
void PrintChargeback(const report::Report& r, std::string_view title, std::size_t width,
                     std::ostream& out);

// Each container's figures in `by_container` (a report by container over the whole run) against
// the simulator's `truth` over `duration_us`: measured ones within 2% of it, estimated ones with
// their error and rule, allocations exact to the rows' rounding. True when every measured one
// is within 2% and every allocation exact.
bool PrintAccuracy(const report::Report& by_container,
                   const std::map<ConsumerRef, sim::Truth>& truth, Micros duration_us,
                   std::size_t width, std::ostream& out);

// The guardrails' findings over the whole ledger, priced (ledger/findings.h).
Status PrintFindings(store::LedgerStore& store, std::size_t width, std::ostream& out);

// What a million tokens cost per model (ledger/tokens.h), as `gpuledger tokens` prints it.
Status PrintTokens(store::LedgerStore& store, std::size_t width, std::ostream& out);

// What could run on less, with the saving a month (ledger/rightsize.h): the five best actions
// and the consolidation plans.
Status PrintRightsizing(store::LedgerStore& store, const cost::Catalog& catalog, std::size_t width,
                        std::ostream& out);

}  // namespace gpuledger::cli
