#pragma once
// NVML's C entry points answering from a real GPU's capture (nvml_capture.h), as that GPU's
// library answered the probe: the agent's NVML source runs over them unchanged (the same table
// its dlopen path fills), on the test's clock.
//
// At wall time T (the clock's), the reads the probe made at or before T are what NVML has said:
// GetSamples and GetProcessUtilization return their samples newer than lastSeenTimeStamp
// (NOT_FOUND when none), the process lists, memory, gauge, energy and power are the latest
// read's, and GPM metrics between two samples are the captured metrics averaged over the reads
// between them, weighted by time. A reader that reads when the probe read sees exactly what the
// probe saw. Process samples come through the pre-R550 nvmlDeviceGetProcessUtilization, the
// entry point the probe called. One replay at a time per process (NVML's entry points are plain
// C functions).

#include "common/clock.h"
#include "nvml_capture.h"
#include "sources/nvml/nvml_api.h"

namespace gpuledger::testing {

// `capture` and `clock` must outlive every use of the table. Replaces any earlier replay.
nvml::NvmlApi ReplayNvml(const NvmlCapture& capture, const Clock& clock);

}  // namespace gpuledger::testing
