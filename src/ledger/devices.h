#pragma once
// Each GPU's figures over a window (/api/v1/devices), from a Snapshot: its placement in the
// window's first hour, and its times, energy and cost summed, prices as billed.

#include <vector>

#include "common/time_range.h"
#include "ledger/snapshot.h"

namespace gpuledger::ledger {

struct DeviceSummary {
  Placement placement;           // as in the GPU's first device-hour of the window
  Bytes memory_total_bytes = 0;  // likewise
  // The GPU's layouts (DeviceHour::layout) in the window, in the order they first appeared:
  // one unless its MIG layout or replicas changed.
  std::vector<std::string> layouts;
  GpuMicros metered_us = 0;
  GpuMicros unmetered_us = 0;
  GpuMicros busy_us = 0;
  GpuMicros idle_us = 0;
  GpuMicros unattributed_us = 0;
  GpuMicros unallocated_us = 0;
  MilliJoules energy_mj = 0;
  Nanos cost_nanos = 0;
};

// One summary per GPU with a device-hour in `window`, ordered by GPU UUID.
std::vector<DeviceSummary> SummarizeDevices(const Snapshot& snapshot, const TimeRange& window);

}  // namespace gpuledger::ledger
