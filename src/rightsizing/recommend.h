#pragma once
// Rightsizing recommendations for one workload (design section 5, issue 12):
// keep, release, fewer GPUs, a time-slice fraction, a MIG profile of the same model, or
// a cheaper GPU model that keeps up, each with the monthly saving at the workload's own
// price, a confidence and the reasons in words. Pure: the usage summary comes
// in as values (the ledger's window summary fills it; not yet wired, see
// docs/rightsizing.md).
//
// Money is exact: hourly costs are int64 nanos, a share of a GPU is SharePpd
// (parts per kWholeGpu), and the saving is ((held - recommended) share x hourly
// price x 730 h) / kWholeGpu in 128-bit integers, rounded half up once. A month
// is 730 hours (8760 / 12).
//
// Output: a ranked list. Every action that saves money (more than
// options.min_monthly_saving_nanos) is returned, highest saving first (ties:
// the order of the Action enum, the least disruptive first); the first is the
// best. When nothing saves money the list is one "keep". The alternatives are
// exclusive: apply one.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/units.h"
#include "model/action.h"

namespace gpuledger::rightsizing {

inline constexpr Micros kHoursPerMonth = 730;

// How fast one GPU of a model is, from its vendor's datasheet (cost/gpu_speed.h); 0 where not
// known.
struct GpuSpeed {
  double memory_bandwidth_gbs = 0;  // GB/s
  double fp16_dense_tflops = 0;     // dense FP16/BF16 tensor throughput, no sparsity

  friend bool operator==(const GpuSpeed&, const GpuSpeed&) = default;
};

// What limits a workload's speed on another model: its memory bandwidth (the utilization class
// says memory-bound), or not known, when both must keep up (no class says compute-bound: a GPU
// busy on its SMs may still wait on memory).
enum class Bound { kUnknown, kMemoryBandwidth };

// A GPU model a workload could move to, at the price it would pay for it.
struct ModelPrice {
  std::string gpu_model;         // "L4"
  Bytes memory_bytes = 0;        // memory of one GPU
  Nanos hourly_price_nanos = 0;  // one GPU for one hour
  GpuSpeed speed;

  friend bool operator==(const ModelPrice&, const ModelPrice&) = default;
};

// One workload (an owner controller across its replicas) over a window.
struct WorkloadUsage {
  std::string workload;   // "ns/Deployment/name"
  std::string gpu_model;  // the model it runs on, the catalog's name ("H100-80GB")
  std::string pool;       // node pool, for grouping (consolidation)
  // GPUs held, averaged over the window, in parts of one whole GPU: 8 *
  // kWholeGpu for eight GPUs, kWholeGpu / 4 for a quarter time-slice. Exact,
  // because it prices the saving.
  SharePpd gpus_held_ppd = 0;
  // GPUs it kept busy (held GPUs whose compute share was above idle at the
  // chosen percentile, or its compute summed over its GPUs): the whole GPUs it
  // needs, rounded up.
  double gpus_used = 0;
  Bytes memory_peak_bytes = 0;  // per GPU, the most of any of its GPUs
  Bytes memory_p99_bytes = 0;
  // Compute share of one physical GPU (0..1), per GPU it uses.
  double compute_p50 = 0;
  double compute_p95 = 0;
  double compute_p99 = 0;
  // Its compute over what it held, over the window (Σ compute GPU-µs / Σ allocated): 0.004
  // when it used 0.4% of its grant.
  double compute_of_allocation = 0;
  double hours_observed = 0;             // hours with data
  double coverage = 0;                   // hours observed / hours of the window, 0..1
  Bytes gpu_memory_bytes = 0;            // memory of one GPU of gpu_model
  Nanos hourly_price_nanos = 0;          // one GPU of gpu_model for one hour, at its own pricing
  std::vector<ModelPrice> other_models;  // candidates for "cheaper-model"
  GpuSpeed speed;                        // of gpu_model
  Bound bound = Bound::kUnknown;
  // How far its compute figure may be off, as its rules were measured on real GPUs
  // (model/compute_band.h: 1.11 for process samples split on a time-sliced GPU); nullopt when
  // a rule that gave it compute was never measured (MIG presence, the allocation fallback):
  // then no move is sized by its compute.
  std::optional<double> compute_band = 0.0;
  std::string compute_rule;  // the rules, "+"-joined, for the reasons
  // A controller that scales by replicas (Deployment, StatefulSet, ReplicaSet) whose pods each
  // held at most one GPU: fewer GPUs means fewer replicas ("fewer-replicas"), not fewer GPUs a
  // pod ("fewer-gpus").
  bool replica_per_gpu = false;
};

enum class Percentile { kP50, kP95, kP99 };
std::string_view PercentileName(Percentile p);  // "p50", "p95", "p99"
std::optional<Percentile> ParsePercentile(std::string_view text);
int PercentOf(Percentile p);  // 50, 95, 99
// The compute share `usage` is sized by: its p50, p95 or p99.
double ComputeAt(const WorkloadUsage& usage, Percentile p);

struct RightsizingOptions {
  double memory_headroom = 1.2;  // room given above the memory peak
  Percentile compute_percentile = Percentile::kP95;
  bool use_p99_memory = false;     // size memory by p99 instead of the peak
  double min_days_high = 7;        // days of data for "high" confidence
  double min_coverage_high = 0.9;  // and coverage
  double min_days_medium = 1;      // below either: "low"
  double min_coverage_medium = 0.5;
  int max_time_slice_replicas = 8;  // 1/2, 1/4, 1/8 (a power of two, <= 16)
  // "cheaper-model" only when the compute need at the percentile, scaled to the other model by
  // the speed ratio that binds (memory bandwidth for a memory-bound workload, else the larger
  // of bandwidth and FP16 throughput), is at most this share of one of its GPUs: the rest is
  // room for bursts. A model whose speed is not known is not offered.
  double max_compute_on_other_model = 0.8;
  // "release": a workload that held GPUs for at least release_min_hours, kept no GPU-hour busy
  // and computed at most release_max_compute of what it held, as guardrails' idle-allocation
  // counts idle (guardrails/policy.h: 1% for 24 hours).
  double release_min_hours = 24;
  double release_max_compute = 0.01;
  Nanos min_monthly_saving_nanos = 0;  // recommend only above this saving
};

// Rightsizing recommends the first seven of the vocabulary it shares with guardrails
// (model/action.h).
using ::gpuledger::Action;

// What a recommended layout gives the workload, for the replay against its own hours
// (recommendations/replay.h): at most `gpus` GPUs (or instances, or slices) busy at once, each
// able to do `compute` of one of its current GPUs (another model's capacity scaled by the speed
// ratio that binds) and to hold `memory_bytes` (0: what its GPUs hold now, the same GPUs).
// `release` gives none.
struct Layout {
  std::int64_t gpus = 0;
  double compute = 0;
  Bytes memory_bytes = 0;

  friend bool operator==(const Layout&, const Layout&) = default;
};

// A recommendation replayed hour by hour against the window's own demand: the hours it would
// not have fit, why, what the window would have cost laid out so, and how many misfit hours
// its percentile allows (p95: 5% of the hours).
struct Replayed {
  std::int64_t hours = 0;          // hours it held a GPU
  std::int64_t misfit_hours = 0;   // hours any of the below
  std::int64_t memory_hours = 0;   // a GPU's memory peak above what the layout holds
  std::int64_t compute_hours = 0;  // a GPU's compute above what the layout does
  std::int64_t gpus_hours = 0;     // more GPUs busy than the layout has
  std::int64_t allowed_hours = 0;  // misfit hours within the percentile's allowance
  Nanos cost_before_nanos = 0;     // the hours at what it held
  Nanos cost_after_nanos = 0;      // the hours at what it would hold
  bool risky() const { return misfit_hours > allowed_hours; }

  friend bool operator==(const Replayed&, const Replayed&) = default;
};

struct Recommendation {
  std::string workload;
  Action action = Action::kKeep;
  std::string target;            // "2 GPUs", "1/4", "1g.10gb", "L4", "0 GPUs", or "" for keep
  std::string gpu_model;         // the model it would run on
  SharePpd recommended_ppd = 0;  // share of gpu_model's GPUs it would hold (all replicas)
  Nanos current_hourly_nanos = 0;
  Nanos recommended_hourly_nanos = 0;
  Nanos monthly_saving_nanos = 0;  // 0 for keep
  std::string confidence;          // "high", "medium", "low"
  double days_observed = 0;
  double coverage = 0;
  std::vector<std::string> reasons;  // full sentences with the numbers
  std::optional<Layout> layout;      // what it gives the workload; none for keep
  std::optional<Replayed> replay;    // set by the replay (recommendations/replay.h)

  friend bool operator==(const Recommendation&, const Recommendation&) = default;
};

// "high (9.0 days observed, 95% coverage)" rules: high when both days and
// coverage reach the high thresholds, medium when both reach the medium ones,
// low otherwise. Recommend lowers a move's "high" to "medium" when the compute
// figure's band is wider than the margin the move leaves (its reasons say so).
std::string Confidence(double days_observed, double coverage, const RightsizingOptions& options);

// `share_ppd` of a GPU at `hourly_price_nanos` for one hour, rounded half up.
Nanos HourlyCost(SharePpd share_ppd, Nanos hourly_price_nanos);
// (`held_ppd` - `recommended_ppd`) at their prices over 730 h, rounded half up
// once.
Nanos MonthlySaving(SharePpd held_ppd, Nanos held_price_nanos, SharePpd recommended_ppd,
                    Nanos recommended_price_nanos);

// The ranked recommendations for `usage` (see the top of this file). A workload
// with no hours observed or no GPUs held gets one "keep" that says why.
std::vector<Recommendation> Recommend(const WorkloadUsage& usage,
                                      const RightsizingOptions& options);

}  // namespace gpuledger::rightsizing
