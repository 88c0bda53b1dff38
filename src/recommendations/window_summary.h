#pragma once
// What each workload (an owner controller across its replicas) did over a window, from the
// ledger's rows: the inputs of rightsizing (rightsizing::WorkloadUsage), its utilization class,
// and the demand series the what-if replay runs (design section 5, issue 12; docs/rightsizing.md
// "From the ledger"). Pure: rows in, summaries out.
//
// Where each figure comes from, and how exact it is:
// - GPUs held: Σ allocated GPU-µs / (hours with an allocation x 1 h), in ppd, rounded half up
//   once: exact, it prices the saving.
// - Compute share percentiles (p50/p95/p99, share of one physical GPU): from the hourly
//   histogram counts (UsageRow::histogram), summed over the window, so a percentile over any
//   window is exact to its bucket; the bucket's upper bound is taken (the buckets are the MIG
//   and time-slice decision points, so the decision is exact). A workload whose rows carry no
//   histogram (ledgers from older agents, PromQL ingestion without them) falls back to its
//   hourly mean shares, and `compute_basis` says so: bursts shorter than an hour are then
//   averaged away.
// - Samples counted are those of the GPU-hours the workload kept busy (its percentile bucket
//   above 5% of a GPU in that hour), or all when it kept none busy: a job holding 8 GPUs and
//   using 2 is sized by the 2 it used, per GPU.
// - GPUs used: per hour, the number of its GPUs it kept busy, at the compute percentile over
//   the hours.
// - Memory peak: the largest hourly peak (UsageRow::peak_memory_bytes, the agent's hour peak)
//   on any one GPU, summed over the workload's containers on that GPU; p99 from the memory
//   histogram's buckets (capped at the peak), else the p99 of the hourly peaks.
// - Price: what the ledger charged it per GPU-hour under the allocation policy (Σ its share of
//   the device-hour prices / GPU-hours held), rounded half up: its own prices, spot or
//   on-demand, overrides and reconciliations included.
// - Confidence inputs: hours observed (hours with an allocation) and coverage (those hours over
//   the hours from its first to its last in the window: gaps are missing data).
//
// Thread-safety: functions only; no state.

#include <map>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "model/ledger.h"
#include "recommendations/workload_hours.h"
#include "report/report.h"
#include "rightsizing/recommend.h"
#include "utilization/classify.h"

namespace gpuledger::recommendations {

struct SummaryOptions {
  Micros from_us = 0;
  Micros to_us = INT64_MAX;
  std::string namespace_name;  // only workloads of this namespace; "" all
  rightsizing::Percentile compute_percentile = rightsizing::Percentile::kP95;
  // Candidate models for "cheaper-model", per pricing class, at the catalog's prices.
  std::map<std::string, std::vector<rightsizing::ModelPrice>> models_by_class;
};

struct WorkloadSummary {
  rightsizing::WorkloadUsage usage;  // .workload is "namespace/Kind/name" (report's controller)
  std::string namespace_name;
  std::string pricing_class;  // the class of most of its GPU-hours: its pool
  std::string compute_basis;  // "histogram: 1440 samples" or "hourly means (no histograms)"
  std::string memory_basis;   // "agent hour peaks; p99 from histogram" or "... p99 of hourly peaks"
  std::int64_t compute_samples = 0;
  utilization::Classification utilization;
  DemandSeries demand;
};

// The datasheet speed of a catalog model (cost::GpuModelSpeed); zeros when not known.
rightsizing::GpuSpeed SpeedOf(std::string_view gpu_model);

// The workload key ("namespace/Kind/name") a consumer's rows are summed under, or "" for a
// consumer rightsizing leaves out: host consumers and unresolved processes (nothing to resize),
// and those outside `options.namespace_name`.
std::string WorkloadKeyOf(const ConsumerInfo& consumer, const SummaryOptions& options);

// The summaries of what was gathered over the window (WorkloadHours::Finish), each joined to
// its row of `by_controller` (the window's report grouped by controller, the allocation
// policy): its price, compute quality and band, utilization class.
std::vector<WorkloadSummary> Summarize(std::vector<GatheredWorkload> gathered,
                                       const report::Report& by_controller,
                                       const SummaryOptions& options);

// Summaries of every Kubernetes workload with rows in [from_us, to_us), from rows given in any
// order, ordered by workload: what a reader of the ledger gathers a day at a time, at once.
// Usage rows whose (hour, gpu) has no device row are ignored, as in reports; a window whose
// sums do not fit in 64 bits is the report's error.
Result<std::vector<WorkloadSummary>> SummarizeWorkloads(std::span<const DeviceHour> devices,
                                                        std::span<const UsageRow> usage,
                                                        const SummaryOptions& options);

}  // namespace gpuledger::recommendations
