#pragma once
// A real GPU's NVML answers as `../shared/data/h200/capture/nvml_probe.py` recorded them
// (nvml-raw.jsonl: one line of static facts, then one line per read, about once a second), for
// replaying through the agent's NVML source (replay_nvml.h).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/units.h"

namespace gpuledger::testing {

struct CapturedProcess {
  unsigned pid = 0;
  Bytes used_bytes = 0;
};

struct CapturedProcessSample {
  unsigned pid = 0;
  Micros ts_us = 0;
  unsigned sm = 0;   // percent
  unsigned mem = 0;  // percent
};

// One read of the one GPU the probe saw.
struct CapturedRead {
  Micros at_us = 0;  // when the probe read (wall clock, µs)
  Bytes memory_used = 0;
  unsigned util_gpu = 0, util_memory = 0;  // the utilization gauge, percent
  std::vector<std::pair<Micros, unsigned>>
      device_samples;  // GetSamples(GPU_UTILIZATION) since the last read
  std::vector<CapturedProcessSample> process_samples;  // GetProcessUtilization since the last read
  std::vector<CapturedProcess> compute, mps;           // the two process lists
  std::int64_t energy_mj = 0;
  unsigned power_mw = 0;
  // GPM metrics (percent) between the previous read's sample and this one's; absent on the first.
  std::map<std::string, double> gpm;
};

struct NvmlCapture {
  std::string name, uuid, driver;
  Bytes memory_total = 0;
  bool gpm_supported = false;
  std::vector<CapturedRead> reads;  // in time order
};

// Parses nvml-raw.jsonl; errors name the file and line.
Result<NvmlCapture> LoadNvmlCapture(const std::string& path);

}  // namespace gpuledger::testing
