#pragma once
// What the agent reads from the GPUs each collection cycle. The real implementation is NVML
// (sources/nvml); tests use the NVML stand-in library through the same real dlopen path.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "model/snapshot.h"

namespace gpuledger::sources {

// A likely environment failure seen this cycle: counted in
// gpuledger_agent_source_errors_total{source,code}, logged once per state change, never fatal.
struct SourceFault {
  std::string source;  // "nvml"
  std::string code;    // "GPU_IS_LOST", "NOT_SUPPORTED", "TIMEOUT", "LIBRARY_NOT_FOUND", ...
  std::string detail;  // call and device, e.g. "nvmlDeviceGetPowerUsage(GPU-1a2b...)"
};

struct GpuInstantaneous {
  GpuUuid device;            // physical GPU
  std::string product_name;  // as NVML names it: "NVIDIA H100 80GB HBM3"
  MilliWatts power_mw = 0;
  MilliJoules energy_total_mj = 0;  // NVML's counter since driver load
  Bytes memory_used_bytes = 0;
  Bytes memory_total_bytes = 0;
  int utilization_percent = -1;  // last NVML utilization.gpu; -1 unknown
};

// One cycle: everything observed since the previous Read().
// The interval's start and end are wall µs; its length is monotonic time since the previous
// reading (the first reading has start == end), so a step of the wall clock never lengthens an
// interval. The GPUs' sharing and replicas are left default: the agent sets them.
struct GpuReading : DeviceInterval {
  // The wall clock stepped by this much since the previous reading (common/clock.h); 0 if not.
  Micros wall_step_us = 0;
  std::vector<ProcessObservation> processes;  // consumer unset; the agent resolves PIDs
  std::vector<GpuInstantaneous> instant;      // gauges for the exporter
  std::vector<SourceFault> faults;
};

class GpuSource {
 public:
  virtual ~GpuSource() = default;
  // Never blocks longer than the source's watchdog deadline: a hung driver call gives an error
  // (kUnavailable, "stale") and a later Read() tries again. Thread-compatible.
  virtual Result<GpuReading> Read() = 0;
  // "nvml: driver 550.54.15, 8 GPUs" or "no GPU: libnvidia-ml.so.1 not found".
  virtual std::string Describe() const = 0;
};

}  // namespace gpuledger::sources
