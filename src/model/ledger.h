#pragma once
// The hourly ledger (design section 7): one DeviceHour per (hour, physical GPU), one UsageRow per
// (hour, physical GPU, consumer). Writes are idempotent by those keys.

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

struct DeviceHour {
  Micros hour_us = 0;              // start of the UTC hour
  std::string cluster;
  std::string node;
  GpuUuid gpu;
  std::string gpu_model;
  SharingMode sharing = SharingMode::kExclusive;
  std::string pricing_class;       // "on-demand", "spot", "reserved", "on-prem"
  PriceState price_state = PriceState::kPriced;
  Nanos price_nanos = 0;           // what this device cost in this hour (hourly price x metered)
  Nanos energy_price_nanos = 0;    // the part of price_nanos that is electricity, charged by
                                   // measured energy (on-prem); 0 for cloud prices
  GpuMicros metered_us = 0;        // time the device was observed in this hour
  GpuMicros unmetered_us = 0;      // time in the hour nobody observed (agent down, gaps)
  GpuMicros unallocated_us = 0;    // metered time no grant covered: the allocation-idle remainder
  GpuMicros busy_us = 0;
  GpuMicros idle_us = 0;           // metered, not busy
  GpuMicros unattributed_us = 0;   // busy, no known process explains it
  Bytes memory_total_bytes = 0;
  KibSeconds unattributed_memory_kib_s = 0;
  MilliJoules energy_mj = 0;
  MilliJoules idle_energy_mj = 0;
  MilliJoules unattributed_energy_mj = 0;
};

struct UsageRow {
  Micros hour_us = 0;
  GpuUuid gpu;
  ConsumerInfo consumer;
  std::string node;
  std::string gpu_model;
  SharingMode sharing = SharingMode::kExclusive;
  std::string device_id;           // replica / MIG instance / GPU it held
  GpuMicros allocated_us = 0;      // Σ over the hour's rows + unallocated_us == metered_us
  GpuMicros compute_us = 0;
  KibSeconds memory_kib_s = 0;     // memory held over the hour
  Bytes peak_memory_bytes = 0;
  MilliJoules energy_mj = 0;
  Quality compute_quality = Quality::kNone;
  Quality memory_quality = Quality::kNone;
  std::string compute_rule;
  Activity activity;               // GPU-µs of SM/tensor/DRAM activity (model/activity.h)
  Quality activity_quality = Quality::kNone;
  std::string activity_rule;
  std::string share_source;        // where a declared share came from; empty: the mode's default
};

// One device-hour with its consumers: the unit a store writes atomically.
struct LedgerHour {
  DeviceHour device;
  std::vector<UsageRow> usage;
};

}  // namespace gpuledger
