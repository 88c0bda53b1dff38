#pragma once
// A consolidation plan laid over the hours it came from (issue 59): the packing sizes each
// workload by its window peak and percentile, as if all ran at once with their peaks together;
// the plan is then replayed hour by hour against the workloads' own demand series. A workload
// whose GPU in the plan would pass one GPU's memory or compute in any hour (its co-located
// workloads' hourly figures added) moves to the first GPU of the plan it fits in every hour,
// else to a new one; so no GPU of a plan shown ever holds more than one GPU in any hour. The
// plan's figures are then the hours': before, the GPU-hours its workloads held over the hours
// of the window's rows (so it equals the GPUs the pool held for them, averaged: a job of one
// hour counts one GPU-hour, not one GPU); after, the GPU-hours of the plan's GPUs, a GPU
// counted in an hour when one of its workloads ran then; the saving, what that frees a month.
// Pure.

#include <map>
#include <string>

#include "common/time_range.h"
#include "recommendations/window_summary.h"
#include "rightsizing/consolidation.h"

namespace gpuledger::recommendations {

// Replays and re-figures `plan` (PlanConsolidation's over `members`, by workload key) over
// `hours` (the hours of the window's rows); `gpu_memory_bytes` and `hourly_price_nanos` are
// one GPU's of the plan. A workload that alone passes one GPU in some hour leaves the plan
// (left_alone says so).
void ReplayConsolidation(rightsizing::ConsolidationPlan& plan,
                         const std::map<std::string, const WorkloadSummary*>& members,
                         Bytes gpu_memory_bytes, Nanos hourly_price_nanos, const TimeRange& hours);

}  // namespace gpuledger::recommendations
