#pragma once
// What attribution produces: per physical GPU and interval, each consumer's share of it and the
// remainders, conserving device time exactly (design section 2).

#include <string>
#include <vector>

#include "common/ids.h"
#include "common/units.h"
#include "model/activity.h"
#include "model/consumer.h"
#include "model/sharing.h"

namespace gpuledger {

// compute_rule values of several intervals combine as a sorted '+'-joined set
// ("device-activity+process-samples"), so a row that mixed rules says so.
std::string MergeRules(const std::string& a, const std::string& b);

struct ConsumerUsage {
  ConsumerRef consumer;
  std::string device_id;       // the replica, MIG instance or GPU it held or ran on
  SharePpd allocated_ppd = 0;  // share of the physical GPU granted over the interval
  GpuMicros compute_us = 0;    // GPU-µs of the physical GPU used
  Bytes memory_bytes = 0;      // GPU memory held through the interval (x duration: byte-µs)
  Bytes peak_memory_bytes = 0;
  MilliJoules energy_mj = 0;
  Quality compute_quality = Quality::kNone;
  Quality memory_quality = Quality::kNone;
  std::string compute_rule;  // how compute was obtained, e.g. "process-samples"
  // SM/tensor/DRAM activity in GPU-µs of the physical GPU: the unit's own figures when the
  // consumer is alone on it (measured), else split by compute (estimated, rule
  // "compute-share"). Quality kNone when no source gave activity.
  Activity activity;
  Quality activity_quality = Quality::kNone;
  std::string activity_rule;  // "gpm", "dcgm-exporter", "gpm+compute-share", ...
  std::string share_source;   // the grant's declared share's origin (Grant::share_source)
};

// Invariants (checked by CheckConservation):
//   busy_us + idle_us == duration,  busy_us == Σ compute_us + unattributed_us
//   Σ allocated_ppd + unallocated_ppd == kWholeGpu (unless over-subscribed: unallocated 0)
//   energy_mj == Σ consumer energy + unattributed_energy_mj + idle_energy_mj
struct DeviceUsage {
  GpuUuid gpu;
  std::string model;
  SharingMode sharing = SharingMode::kExclusive;
  Micros start_us = 0;
  Micros end_us = 0;
  SharePpd unallocated_ppd = kWholeGpu;
  GpuMicros busy_us = 0;
  GpuMicros idle_us = 0;
  GpuMicros unattributed_us = 0;
  Bytes memory_total_bytes = 0;
  Bytes unattributed_memory_bytes = 0;  // used memory no known process explains
  MilliJoules energy_mj = 0;
  MilliJoules idle_energy_mj = 0;
  MilliJoules unattributed_energy_mj = 0;
  std::vector<ConsumerUsage> consumers;

  Micros duration_us() const { return end_us - start_us; }
};

}  // namespace gpuledger
