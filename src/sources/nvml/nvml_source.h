#pragma once
// GpuSource over NVML (docs/nvml.md). Every NVML call runs under a Watchdog deadline; a failed
// call degrades only its datum or device and becomes a SourceFault{"nvml", "<NVML error name>",
// "<function>(<uuid>)"}. A node without a driver gets a "no GPU" source that keeps answering.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/units.h"
#include "sources/gpu_source.h"
#include "sources/nvml/nvml_api.h"

namespace gpuledger::nvml {

struct NvmlSourceOptions {
  Micros call_deadline_us = 2'000'000;  // per NVML call
  int lost_retry_cycles = 10;           // while a GPU is lost, re-enumerate every N reads
  // A sample stands for at most this long (besides the read interval): after a gap (a stale
  // source, a full NVML sample buffer, idle processes that NVML does not sample) one sample is
  // not extrapolated over the whole gap. NVML samples every 1/6 s to 1 s.
  Micros max_sample_period_us = 2'000'000;
};

// Loads `library` (normally "libnvidia-ml.so.1"), runs nvmlInit_v2 and returns the source. Never
// fails: without the library, a required symbol or a working driver it returns a "no GPU"
// source whose Read() gives an empty reading with one fault (LIBRARY_NOT_FOUND,
// FUNCTION_NOT_FOUND, DRIVER_NOT_LOADED, ... or TIMEOUT). `clock` is the agent's clock (wall time
// on the same base as NVML's sample timestamps; lengths from its monotonic part); it must
// outlive the source.
std::unique_ptr<sources::GpuSource> OpenNvmlSource(const std::string& library,
                                                   Micros call_deadline_us, const Clock& clock);
// The same over an already resolved table (tests inject fakes here; the table's `library` may be
// null). Runs nvmlInit_v2 through the watchdog; nvmlShutdown runs on destruction unless a call
// is hung.
std::unique_ptr<sources::GpuSource> OpenNvmlSource(NvmlApi api, NvmlSourceOptions options,
                                                   const Clock& clock);
// The "no GPU" source: Read() returns an empty reading carrying `fault`; Describe() is
// "no GPU: <why>".
std::unique_ptr<sources::GpuSource> MakeNoGpuSource(sources::SourceFault fault, std::string why,
                                                    const Clock& clock);

}  // namespace gpuledger::nvml
