#pragma once
// Days of rightsizing kept in the ledger (issue 59): what WorkloadHours gathers of a whole UTC
// day (every workload, every percentile) kept beside the day's rows in the table of days kept
// summed (ledger/day_rollup.h), under a kind of its own. A write that touches a day drops what
// was kept of it, so a kept day is the day as it stands. A server keeps them in the background
// with the reports' days (KeepRightsizeDays); readers take the days kept and gather the others
// from their rows, and never write: at 10,000 GPUs x 30 days, 30 kept days of a few MB each
// rather than tens of millions of rows.

#include <functional>
#include <string>

#include "common/result.h"
#include "common/time_range.h"
#include "recommendations/window_summary.h"
#include "recommendations/workload_hours.h"
#include "store/ledger_store.h"

namespace gpuledger::recommendations {

// The store's name for a day kept for rightsizing, its bytes' format in it: a build finds only
// the days it can read, and keeps its own beside another's.
std::string RightsizeDayKind();

// What `hours` gathers of [from, to) for `options` (its namespace), oldest first: each whole day
// the ledger keeps from its kept bytes, the others (and a kept day that does not read) from
// their rows, one store scan a day.
Status GatherDays(store::LedgerStore& store, const TimeRange& range, const SummaryOptions& options,
                  WorkloadHours& hours);

// Keeps every whole UTC day within `days` that the ledger does not keep yet and holds rows of,
// oldest first, each gathered from its rows alone; `stop` is asked between days.
// Returns how many it kept (a day written meanwhile is not).
Result<int> KeepRightsizeDays(store::LedgerStore& store, const TimeRange& days,
                              const std::function<bool()>& stop);

}  // namespace gpuledger::recommendations
