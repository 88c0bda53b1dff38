#pragma once
// What each workload did over a window, gathered an hour of rows at a time (issue 59): a
// reader of the ledger passes each hour's device-hours and then its rows, oldest hour first,
// and what is kept is per workload (sums, histograms, a count per hour, the demand series),
// never the rows, so a month at 10,000 GPUs reads a day at a time in the memory of its
// workloads. window_summary.h turns what is gathered into the rightsizing inputs; it feeds
// rows given in any order through here too, so both readers share one computation.
//
// What a workload keeps grows with its GPU-hours, not its rows: its demand series (a float and
// a MiB count per GPU-hour), from which the percentiles of rows without histograms are taken
// (their hourly shares and peaks).
//
// What is gathered does not depend on the percentile asked for: each GPU-hour's busy decision
// is kept for every percentile, and Finish takes the one asked for, so a day gathered once
// (rightsize_days.h keeps days in the ledger) answers any of them.
//
// Thread-compatible: one reader.

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/dense_id_map.h"
#include "common/result.h"
#include "model/ledger.h"
#include "rightsizing/recommend.h"

namespace gpuledger::recommendations {

// One workload's demand, hour by hour, for the what-if replay: `hours` ascending; in each hour
// its GPUs busiest first (so replicas that restart under new names stay one series), each with
// the compute share of one physical GPU and the memory peak on that GPU, in MiB rounded up (a
// replay that finds it fits is never optimistic by the rounding). Hour i's GPUs are
// [first[i], first[i + 1]) of `compute` and `memory_mib` (the last hour's end is their size):
// 8 bytes a GPU-hour it held, whatever it held in its other hours.
struct DemandSeries {
  std::vector<Micros> hours;
  std::vector<std::uint32_t> first;  // by hour
  std::vector<float> compute;        // by GPU-hour
  std::vector<std::uint32_t> memory_mib;

  // Hour i's GPUs: [begin, end) of compute and memory_mib.
  std::pair<std::size_t, std::size_t> Gpus(std::size_t i) const {
    return {first[i], i + 1 < first.size() ? first[i + 1] : compute.size()};
  }
  friend bool operator==(const DemandSeries&, const DemandSeries&) = default;
};

// Whether a GPU-hour without a histogram was busy: its share of the GPU above the first compute
// bucket (5%), compared as the demand series keeps it (a float), so the percentiles taken from
// the series and the replay pick the same GPU-hours as the gathering.
bool BusyShare(float share);

// The compute share at percentile `p` of a compute histogram: the upper bound of the bucket
// holding the nearest-rank sample (kComputeShareBounds); 0 with no samples.
double HistogramPercentile(const std::array<std::int64_t, UsageHistogram::kComputeBuckets>& counts,
                           rightsizing::Percentile p);

// A workload's figures over the window, as gathered (window_summary.h explains each rule).
struct GatheredWorkload {
  std::string key;  // "namespace/Kind/name" (the report's controller)
  std::string namespace_name;
  std::string gpu_model;       // of most of its allocated GPU-time (ties: the first by name)
  std::string pricing_class;   // likewise: its pool
  Bytes gpu_memory_bytes = 0;  // the largest memory of its GPUs of that model
  __int128 allocated_us = 0;
  double gpus_used = 0;               // busy GPUs per hour at the percentile over its hours
  std::int64_t max_gpus_per_pod = 0;  // the most GPUs one of its pods held in an hour
  // The compute share percentiles of its sized GPU-hours (its busy ones, or all when none was
  // busy), and how they were taken.
  double compute_p50 = 0, compute_p95 = 0, compute_p99 = 0;
  std::int64_t compute_samples = 0;
  bool compute_from_histograms = false;
  Bytes memory_peak_bytes = 0, memory_p99_bytes = 0;
  bool memory_p99_from_histograms = false;
  DemandSeries demand;  // its hours with an allocation are demand.hours
};

class WorkloadHours {
 public:
  // The index of the workload `key` (of namespace `namespace_name`), added on first use.
  std::uint32_t Workload(const std::string& key, const std::string& namespace_name);
  // The id of the pod `consumer` runs in (by namespace and UID, else name), added on first use.
  std::uint32_t Pod(const ConsumerRef& consumer);

  // What a device-hour tells rightsizing; its model and pricing class by ModelId and ClassId.
  struct HourDevice {
    GpuMicros metered_us = 0;
    Bytes memory_total_bytes = 0;
    std::uint32_t model = 0, pricing_class = 0;
  };
  std::uint32_t ModelId(std::string_view gpu_model) { return models_.Of(gpu_model); }
  std::uint32_t ClassId(std::string_view pricing_class) { return classes_.Of(pricing_class); }
  // A device-hour of `hour_us`, before its rows. `gpu` is any id naming one GPU (a scan's key).
  // Hours come in ascending order: a later hour closes the one before.
  void Device(Micros hour_us, std::int64_t gpu, const HourDevice& device);
  // A usage row of workload `workload`'s pod `pod` (any id naming one pod) on the device-hour
  // (hour_us, gpu) given before; a row whose device-hour was not given is left out, as reports
  // leave it out.
  void Row(std::uint32_t workload, std::uint32_t pod, Micros hour_us, std::int64_t gpu,
           const UsageRow& figures);

  // Closes the open hour and lets go of what only an open hour needs (its rows, the pods'
  // names): what a gathered day holds after its last hour.
  void Seal();
  // Adds what `later` gathered over hours after every hour given here (a window read in
  // parts): the same as had its rows been given here; with `namespace_name`, only its workloads
  // of that namespace (as WorkloadKeyOf filters rows). `later` is spent.
  void Append(WorkloadHours&& later, std::string_view namespace_name = {});

  // Every workload's figures, by key, sized at `percentile`; the gatherer is spent.
  std::vector<GatheredWorkload> Finish(rightsizing::Percentile percentile);

  // The bytes of what was gathered (sealed first), and back (workload_hours_codec.cc): how the
  // ledger keeps a day gathered. Decode's error names the field that does not read.
  // Encode's format: bump it whenever what the bytes mean changes (a figure, a busy rule), so
  // no build reads another's.
  static constexpr std::uint64_t kFormat = 1;
  std::string Encode() const;
  static Result<WorkloadHours> Decode(std::string_view bytes);

 private:
  // One GPU of a workload in the open hour: its containers' rows on that GPU, added.
  struct GpuHour {
    std::uint32_t workload = 0;
    std::int64_t gpu = 0;
    std::uint32_t pod = 0;
    GpuMicros allocated_us = 0, compute_us = 0;
    Bytes peak_memory_bytes = 0;
    UsageHistogram histogram;
    HourDevice device;
    double Share() const;
  };
  // Busy-GPU counts and compute histograms per percentile (rightsizing::Percentile's order).
  static constexpr std::size_t kPercentiles = 3;
  using ComputeCounts = std::array<std::int64_t, UsageHistogram::kComputeBuckets>;
  // What a workload keeps across hours.
  struct Acc {
    std::string key, namespace_name;
    bool has_rows = false;  // a workload named but never given a row is not one
    __int128 allocated_us = 0;
    // Per percentile: busy GPUs in an hour -> hours.
    std::array<std::map<std::int64_t, std::int64_t>, kPercentiles> hours_by_busy_gpus;
    // Over its busy GPU-hours (per percentile) and over all of them: compute histograms.
    std::array<ComputeCounts, kPercentiles> busy_compute{};
    ComputeCounts all_compute{};
    std::int64_t max_gpus_per_pod = 0;  // the most GPUs one of its pods held in an hour
    std::array<std::int64_t, UsageHistogram::kMemoryBuckets> memory{};
    Bytes memory_peak_bytes = 0;
    std::vector<GpuMicros> allocated_by_model, allocated_by_class;  // by models_, classes_
    std::vector<Bytes> memory_by_model;  // the largest memory of its GPUs of a model
    DemandSeries demand;                 // its hours with an allocation, and their GPUs
  };

  // Names kept once, by index.
  struct Names {
    std::vector<std::string> text;
    std::unordered_map<std::string, std::uint32_t> index;
    std::uint32_t Of(std::string_view name);
  };
  // Adds the open hour's GPU-hours to their workloads, and opens `hour_us`.
  void CloseHour(Micros next_hour_us);
  // Adds one workload's rows of the open hour, sorted by GPU and pod, to `acc`.
  void AddHour(Acc& acc, std::vector<GpuHour>::iterator first, std::vector<GpuHour>::iterator last);
  GatheredWorkload Figures(Acc& acc, rightsizing::Percentile percentile) const;

  std::vector<Acc> accs_;
  std::map<std::string, std::uint32_t> index_;
  Names models_, classes_, pod_names_;
  Micros open_hour_us_ = INT64_MIN;
  DenseIdMap<HourDevice> devices_;   // of the open hour, by GPU
  std::vector<GpuHour> rows_;        // of the open hour, one per row
  std::vector<std::uint32_t> pods_;  // scratch: a workload-hour's pods
};

}  // namespace gpuledger::recommendations
