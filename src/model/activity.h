#pragma once
// Utilization signals beyond "a kernel ran" (design section 5): what the SMs, tensor pipes and
// DRAM did. NVML's utilization.gpu says only that some kernel was resident; a pod can show 100%
// with one warp on one SM. These fractions, integrated over time, tell the two apart.

#include <optional>
#include <string_view>

#include "common/units.h"

namespace gpuledger {

// Integrals over an interval of 0..1 fractions, in µs. On a DeviceSignals they are relative to
// the unit (the physical GPU, or the MIG instance); on a ConsumerUsage and a UsageRow they are
// GPU-µs of the physical GPU, like compute (a 3g instance fully active for 1 s is 3/7 s).
struct Activity {
  GpuMicros sm_active_us = 0;      // fraction of SMs with a warp resident (GPM SM_UTIL, DCGM
                                   // PROF_SM_ACTIVE)
  GpuMicros sm_occupancy_us = 0;   // resident warps / the SMs' maximum (GPM SM_OCCUPANCY, DCGM
                                   // PROF_SM_OCCUPANCY)
  GpuMicros tensor_active_us = 0;  // any tensor pipe busy (GPM ANY_TENSOR_UTIL, DCGM
                                   // PROF_PIPE_TENSOR_ACTIVE)
  GpuMicros dram_active_us = 0;    // DRAM bandwidth used / peak (GPM DRAM_BW_UTIL, DCGM
                                   // PROF_DRAM_ACTIVE)

  Activity& operator+=(const Activity& o) {
    sm_active_us += o.sm_active_us;
    sm_occupancy_us += o.sm_occupancy_us;
    tensor_active_us += o.tensor_active_us;
    dram_active_us += o.dram_active_us;
    return *this;
  }
  auto operator<=>(const Activity&) const = default;
};

// Where a device figure came from. A MIG instance's busy time from GPM or DCGM is its own
// measurement; NVML's utilization.gpu is none on MIG.
enum class SignalSource { kNone, kNvml, kGpm, kDcgm };

std::string_view ToString(SignalSource source);  // "", "nvml", "gpm", "dcgm-exporter"
std::optional<SignalSource> ParseSignalSource(std::string_view text);

}  // namespace gpuledger
