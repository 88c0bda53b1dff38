#pragma once
// What the exact-delta engine keeps between scrapes, as plain data: per agent instance its last
// counter values and the facts it last described, and per open (hour, GPU) the accumulators that
// close into ledger rows. counter_ledger.cc runs the engine over it; counter_state_codec.cc saves
// and restores it.

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "common/units.h"
#include "model/consumer.h"
#include "model/ledger.h"
#include "model/sharing.h"
#include "model/usage.h"

namespace gpuledger::ingest::state {

struct SeriesState {
  std::int64_t value = 0;  // the agent's integer count
  Micros at_us = 0;
};
struct DeviceFacts {
  std::string node, model, sharing, parent;
  Micros seen_us = 0;  // the last scrape that described it (Prune)
  std::string layout;  // the device_info's (DeviceHour::layout); "" from older agents
};
struct Sources {
  std::string compute, memory;
  Micros seen_us = 0;
  std::string activity, share;  // activity_source, share_source ("" from older agents)
};
struct InstanceState {
  Micros last_at_us = INT64_MIN;
  std::map<std::string, SeriesState> series;
  std::map<std::string, DeviceFacts> devices;  // gpu uuid -> facts
  std::map<std::string, Sources> attribution;  // ConsumerKey -> sources
};
struct ConsumerAcc {
  GpuMicros allocated_us = 0, compute_us = 0;
  KibSeconds memory_kib_s = 0;
  MilliJoules energy_mj = 0;
  Bytes peak_memory_bytes = 0;
  Quality compute_quality = Quality::kNone;
  Quality memory_quality = Quality::kNone;
  std::string rule;
  Activity activity;
  Quality activity_quality = Quality::kNone;
  std::string activity_rule;
  std::string share_source;
  // Cumulative bucket counts of the hour, as the deltas of the agent's `_bucket` counters
  // came (per bucket: UsageHistogram at Close).
  std::array<std::int64_t, UsageHistogram::kComputeBuckets> compute_le{};
  std::array<std::int64_t, UsageHistogram::kMemoryBuckets> memory_le{};
};
struct DeviceAcc {
  std::string node, model, sharing, layout;
  GpuMicros metered_us = 0, busy_us = 0, idle_us = 0, unattributed_us = 0;
  MilliJoules energy_mj = 0;
  KibSeconds unattributed_memory_kib_s = 0;
  Bytes memory_total_bytes = 0;
  std::map<ConsumerRef, ConsumerAcc> consumers;
};
using HourKey = std::pair<Micros, std::string>;  // (hour, physical gpu uuid)

// The engine's own fields beside its instances and hours.
struct EngineFields {
  Micros forgotten_before_us = INT64_MIN;
  Micros latest_us = INT64_MIN;
  Micros observing_since_us = INT64_MAX;
  std::int64_t ignored = 0;
  std::int64_t resets = 0;
  std::int64_t late_dropped = 0;
};

}  // namespace gpuledger::ingest::state
