#pragma once
// Utilization classes of a workload over a window (design section 5; docs/utilization.md).
//
// NVML's utilization.gpu (the ledger's compute_us) says only that some kernel was resident: a
// pod can show 100% with one warp on one SM. The activity integrals (SM active, SM occupancy,
// tensor active, DRAM active; GPM or dcgm-exporter) tell the two apart. A classification names
// the class, the signals and thresholds its rule compared, the basis (which activity source, or
// "nvml-only"), and a sentence saying why.
//
// Every signal is a fraction of the workload's granted time (allocated GPU-µs of the physical
// GPU): GPU util = compute / allocated, SM active = sm_active / allocated, and so on. Activity
// signals are taken over the part of the window that carried activity (activity_allocated_us),
// so a window where dcgm-exporter came up half-way is not read as half-idle SMs. The rules
// compare integers against rational thresholds (exact at the boundaries); the doubles are for
// display. Pure: no I/O. Thread-safe (no state).

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/units.h"
#include "model/activity.h"
#include "model/sharing.h"

namespace gpuledger::utilization {

// A threshold as an exact ratio num/den (den > 0).
struct Ratio {
  std::int64_t num = 0;
  std::int64_t den = 1;
  double value() const { return static_cast<double>(num) / static_cast<double>(den); }
};

// The thresholds, documented with their reasons in docs/utilization.md.
inline constexpr Ratio kIdleUtilBelow{1, 100};           // idle: util < 1% and no memory held
inline constexpr Ratio kAllocatedIdleUtilBelow{5, 100};  // allocated-but-idle: util < 5%
inline constexpr Ratio kBusyUtilAtLeast{50, 100};        // busy-but-starved: util >= 50% ...
inline constexpr Ratio kStarvedSmPerUtilBelow{25, 100};  // ... and SM active < 25% of util
inline constexpr Ratio kMemoryBoundDramPerUtilAtLeast{50, 100};  // memory-bound: DRAM active
                                                                 // >= 50% of util (and >= SM)
inline constexpr Ratio kMemoryBoundFootprintAtLeast{75, 100};    // NVML only: footprint >= 75%
                                                                 // of the granted memory ...
inline constexpr Ratio kLightUtilBelow{25, 100};  // ... while util < 25%; compute-light too

enum class Class {
  kUnallocated,       // no grant in the window: nothing to judge a share against
  kIdle,              // no GPU process ran: util < 1% and no memory held
  kAllocatedButIdle,  // holds its grant (maybe memory), computes almost nothing
  kBusyButStarved,    // kernels resident most of the time, but on few SMs
  kMemoryBound,       // DRAM bandwidth is the limiter (or, NVML only: memory footprint)
  kComputeLight,      // computes, but under a quarter of its grant
  kHealthy,
  kUnknown,  // would be healthy by an estimate of compute too uncertain to say so, and neither
             // the estimate's band nor the GPUs' own busy time settles it
};

// "unallocated", "idle", "allocated-but-idle", "busy-but-starved", "memory-bound",
// "compute-light", "healthy", "unknown".
std::string_view ToString(Class c);

// What a workload did over a window: sums of its ledger rows (report::Figures).
// An estimate of compute is trusted to call a workload healthy when its rules were measured on
// real hardware to be off by at most this much (model/compute_band.h): a time-sliced
// process-samples split (up to 111% off on an H200) or a MIG presence bound (never measured)
// is not.
inline constexpr Ratio kTrustedComputeBand{25, 100};

struct Inputs {
  GpuMicros allocated_us = 0;  // granted GPU-µs of the physical GPU
  GpuMicros compute_us = 0;    // NVML utilization.gpu integral (a kernel resident)
  // How compute_us was had: measured, or estimated by these rules ("+"-joined compute rules).
  Quality compute_quality = Quality::kMeasured;
  std::string compute_rule;
  KibSeconds memory_kib_s = 0;  // memory held over time
  // The granted share of the device memory over time (memory_total x allocated_us, KiB-s);
  // 0 when the device's memory size is unknown (the footprint rule is then skipped).
  KibSeconds granted_memory_kib_s = 0;
  // Activity integrals (GPU-µs of the physical GPU) of the rows that carried activity, with
  // those rows' allocated and compute time. All 0 when no row did.
  Activity activity;
  GpuMicros activity_allocated_us = 0;
  GpuMicros activity_compute_us = 0;
  Quality activity_quality = Quality::kNone;
  std::string activity_rule;  // "gpm", "dcgm-exporter", "compute-share+gpm", ...
  // The busy time of the GPUs its rows ran on, over those rows' hours (NVML's measured device
  // util; what the per-device method charges): no consumer computes more than the GPU it ran
  // on, so an estimate's upper bound. 0: not known.
  GpuMicros device_busy_us = 0;
  // The least GPU time it can have used (model/compute_band.h ComputeFloor, summed over its
  // rows): what an uncertain estimate still vouches for.
  GpuMicros compute_floor_us = 0;
};

struct Classification {
  Class cls = Class::kUnallocated;
  // The signals and thresholds the deciding rule compared, in a fixed order, by name:
  // signals gpu_util, sm_active, sm_occupancy, tensor_active, dram_active, memory_footprint,
  // activity_coverage; thresholds named after the rule (e.g. "busy_util_min").
  std::vector<std::pair<std::string, double>> signals;
  std::vector<std::pair<std::string, double>> thresholds;
  // Where the activity signals came from: "gpm", "dcgm-exporter", "dcgm-exporter+gpm" (both in
  // the window), the activity rule as recorded for another source, or "nvml-only" when there
  // were none (only NVML's util and memory were there).
  std::string basis;
  bool nvml_only = true;
  std::string reason;  // one sentence, with the numbers
};

Classification Classify(const Inputs& in);

}  // namespace gpuledger::utilization
