#pragma once
// Chargeback reports over a Snapshot: one pass over its columns for any number of steps, each
// report equal, integer for integer, to report::BuildReport over the same priced rows (a
// property test checks it on random ledgers).

#include <vector>

#include "common/result.h"
#include "common/time_range.h"
#include "cost/policy.h"
#include "ledger/filter.h"
#include "ledger/snapshot.h"
#include "report/report.h"
#include "store/ledger_store.h"

namespace gpuledger::ledger {

struct ReportQuery {
  TimeRange window;
  TimeRange extent;  // what the ledger held when the window was resolved against it
  std::vector<report::Dimension> group_by;
  cost::Policy policy;
  cost::IdleHandling idle;
  // > 0: one report per step from window.from_us (the last one may be shorter), as if each
  // were asked for alone; 0: one report over the window.
  Micros step = 0;
  // Only the consumers it matches get rows (their cost is what it is in the whole cluster:
  // every device-hour is still split over all of its consumers). Idle, unattributed and the
  // totals are the whole window's; an edge that filters decides whether to show them.
  Filter filter;
  // Only the rows are wanted: idle, unattributed and the totals are left zero, and a
  // device-hour none of whose rows (nor its platform row) the filter keeps is not split, so a
  // filter for one workload sums a sliver of the window. The rows are as without it.
  bool rows_only = false;
  // At most this many bytes of sums by step and group (0: no limit): a report whose steps times
  // groups would pass it is kInvalidArgument ("step: ...") before it sums, or as soon as the
  // days read show it (issue 58: hourly steps by container over 30 days at 10,000 GPUs were
  // gigabytes before a byte was answered).
  std::size_t max_sum_bytes = 0;
};

// What `gpuledger server` lets one report sum: a quarter of its pod's 1 GiB.
inline constexpr std::size_t kServerSumBytes = std::size_t{256} << 20;

// How many threads sum a report: one per `devices_per_worker` devices of the window, at most
// `max_workers` (and the machine's cores). The answer is the same for any of them.
struct Parallelism {
  std::size_t devices_per_worker = 50'000;  // below that a thread costs more than it saves
  unsigned max_workers = 4;
};

// The length of a query's steps: its step, or its whole window (at least 1 µs) without one.
Micros StepLength(const ReportQuery& query);
// The reports of a query's steps before anything is summed into them: each step's window (from
// the window's start, the last cut at its end; one for an empty window), the query's grouping,
// policy and idle handling.
std::vector<report::Report> StepReports(const ReportQuery& query);

// kInvalidArgument for a window whose sums do not fit in 64 bits (report::BuildReport's).
// The snapshot must cover query.window.
Result<std::vector<report::Report>> BuildReports(const Snapshot& snapshot, const ReportQuery& query,
                                                 const Parallelism& parallelism = {});

// Whether the reports of a query's steps (or of any parts of its window) sum to the report of
// its window: not when idle goes to a namespace and a label groups, as the platform row takes
// the namespace's labels only in the steps where the namespace has a row.
bool StepsSumToWindow(const ReportQuery& query);

// The report over the whole window of `steps` (BuildReports' answer to a query with a step),
// summed from them: integer for integer BuildReports' answer to the query without its step,
// where StepsSumToWindow(query).
report::Report SumSteps(const std::vector<report::Report>& steps);

// The error of a report whose sums by step and group would pass ReportQuery::max_sum_bytes.
Error TooManySums(std::size_t steps, std::size_t sums, std::size_t max_bytes);

}  // namespace gpuledger::ledger
