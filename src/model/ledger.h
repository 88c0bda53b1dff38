#pragma once
// The hourly ledger (design section 7): one DeviceHour per (hour, physical GPU), one UsageRow per
// (hour, physical GPU, consumer). Writes are idempotent by those keys.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/ids.h"
#include "common/units.h"
#include "model/activity.h"
#include "model/consumer.h"
#include "model/sharing.h"

namespace gpuledger {

// Whether a device-hour carries a price: a GPU model no catalog entry names is recorded with
// its usage and price 0, and reports list it, rather than failing the ingestion.
enum class PriceState { kPriced, kUnpriced };

// What a device-hour cost and how its time, memory and energy went: the numbers that every
// form of a device-hour (recorded, held, summed) carries alike.
struct DeviceHourAmounts {
  Nanos price_nanos = 0;         // what this device cost in this hour (hourly price x metered)
  Nanos energy_price_nanos = 0;  // the part of price_nanos that is electricity, charged by
                                 // measured energy (on-prem); 0 for cloud prices
  GpuMicros metered_us = 0;      // time the device was observed in this hour
  GpuMicros unmetered_us = 0;    // time in the hour nobody observed (agent down, gaps)
  GpuMicros unallocated_us = 0;  // metered time no grant covered: the allocation-idle remainder
  GpuMicros busy_us = 0;
  GpuMicros idle_us = 0;          // metered, not busy
  GpuMicros unattributed_us = 0;  // busy, no known process explains it
  Bytes memory_total_bytes = 0;
  KibSeconds unattributed_memory_kib_s = 0;
  MilliJoules energy_mj = 0;
  MilliJoules idle_energy_mj = 0;
  MilliJoules unattributed_energy_mj = 0;
};

// Where a device-hour's GPU stood and how it was shared and priced: what the store keeps
// once per distinct value (its placements table).
struct DeviceHourPlacement {
  std::string cluster;
  std::string node;
  std::string gpu_model;
  SharingMode sharing = SharingMode::kExclusive;
  // How the GPU was divided in the hour, as its agent described it (DescribeLayout): MIG
  // instances' profiles, largest first ("3g.71gb+2g.35gb+2g.35gb"), or "4 replicas"
  // (time-slicing, MPS); "" for a GPU used whole or described by no agent.
  std::string layout;
  std::string pricing_class;  // "on-demand", "spot", "reserved", "on-prem"
  PriceState price_state = PriceState::kPriced;
};

struct DeviceHour : DeviceHourPlacement, DeviceHourAmounts {
  Micros hour_us = 0;  // start of the UTC hour
  GpuUuid gpu;
};

// How a consumer's per-cycle samples on one GPU fell over the hour: the agent's rightsizing
// histograms (gpuledger_container_compute_share, gpuledger_container_memory_usage_bytes;
// docs/agent.md), as exact counts per bucket (not cumulative). The buckets are the rightsizing
// decisions: compute share of the physical GPU <= 0.05, 1/7, 2/7, 3/7, 4/7, above; memory <=
// 1/8, 2/8, 4/8 of the GPU's memory, above. Counts over any window add, so a percentile over
// a week is exact to the bucket (docs/rightsizing.md). All zero: no histogram was reported.
struct UsageHistogram {
  static constexpr int kComputeBuckets = 6;
  static constexpr int kMemoryBuckets = 4;
  std::array<std::int64_t, kComputeBuckets> compute{};
  std::array<std::int64_t, kMemoryBuckets> memory{};

  bool empty() const {
    for (std::int64_t c : compute)
      if (c != 0) return false;
    for (std::int64_t m : memory)
      if (m != 0) return false;
    return true;
  }
  UsageHistogram& operator+=(const UsageHistogram& o) {
    for (int i = 0; i < kComputeBuckets; ++i) compute[i] += o.compute[i];
    for (int i = 0; i < kMemoryBuckets; ++i) memory[i] += o.memory[i];
    return *this;
  }
  friend bool operator==(const UsageHistogram&, const UsageHistogram&) = default;
};

// The upper bounds of UsageHistogram::compute's buckets (the last is 1: a whole GPU).
inline constexpr std::array<double, UsageHistogram::kComputeBuckets> kComputeShareBounds = {
    0.05, 1.0 / 7, 2.0 / 7, 3.0 / 7, 4.0 / 7, 1.0};
// The upper bounds of UsageHistogram::memory's buckets in eighths of the GPU's memory.
inline constexpr std::array<int, UsageHistogram::kMemoryBuckets> kMemoryEighthBounds = {1, 2, 4, 8};

// What a consumer used of a device in an hour: the numbers that every form of a usage row
// (recorded, stored, held) carries alike.
struct UsageAmounts {
  GpuMicros allocated_us = 0;  // Σ over the hour's rows + unallocated_us == metered_us
  GpuMicros compute_us = 0;
  KibSeconds memory_kib_s = 0;  // memory held over the hour
  Bytes peak_memory_bytes = 0;
  MilliJoules energy_mj = 0;
  Activity activity;         // GPU-µs of SM/tensor/DRAM activity (model/activity.h)
  UsageHistogram histogram;  // the hour's compute-share and memory distributions
};

// How a consumer's figures on a device were come by: what the store keeps once per distinct
// value (its usage_contexts table).
struct UsageRowContext {
  std::string node;
  std::string gpu_model;
  SharingMode sharing = SharingMode::kExclusive;
  std::string device_id;  // replica / MIG instance / GPU it held
  Quality compute_quality = Quality::kNone;
  Quality memory_quality = Quality::kNone;
  std::string compute_rule;
  Quality activity_quality = Quality::kNone;
  std::string activity_rule;
  std::string share_source;  // where a declared share came from; empty: the mode's default
};

struct UsageRow : UsageRowContext, UsageAmounts {
  Micros hour_us = 0;
  GpuUuid gpu;
  ConsumerInfo consumer;
};

// One device-hour with its consumers: the unit a store writes atomically.
struct LedgerHour {
  DeviceHour device;
  std::vector<UsageRow> usage;
};

}  // namespace gpuledger
