#pragma once
// Pure decoding of what NVML's calls hand back: MIG profile names, process lists whose entry size
// depends on the driver, fixed-size C strings and typed sample values. No library needed: the
// tests feed these bytes directly.

#include <array>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "common/units.h"
#include "sources/nvml/nvml.h"

namespace gpuledger::nvml {

// The MIG profile at the end of a MIG device's name: "NVIDIA H100 80GB HBM3 MIG 3g.40gb" ->
// "3g.40gb" (also "1g.10gb+me", "1c.3g.40gb"); empty when the name carries none.
std::string ParseMigProfile(std::string_view mig_device_name);
// GPU instance slices of a profile: "3g.40gb" -> 3, "1c.3g.40gb" -> 3; 0 when unparsable.
int ProfileSlices(std::string_view profile);

struct ProcessEntry {
  unsigned pid = 0;
  Bytes used_memory_bytes = 0;  // 0 when NVML says NVML_VALUE_NOT_AVAILABLE
  bool mps_client = false;      // listed by nvmlDeviceGetMPSComputeRunningProcesses_v3
};
// Decodes `count` entries of a *RunningProcesses_v3 buffer of `capacity` nvmlProcessInfo_t that
// was filled with `sentinel` bytes before the call. R535+ drivers write 32-byte entries, R510-R530
// wrote 24-byte ones through the same _v3 symbol: the extent the driver overwrote tells which.
std::vector<ProcessEntry> ParseProcessInfos(const nvmlProcessInfo_t* buffer, std::size_t capacity,
                                            unsigned count, unsigned char sentinel);

// A NUL-terminated string in a fixed buffer NVML filled (no terminator: the whole buffer).
template <std::size_t N>
std::string CString(const std::array<char, N>& buffer) {
  return std::string(buffer.data(), strnlen(buffer.data(), N));
}

// A sample's value as a double, whatever type NVML says it has.
double SampleValue(nvmlValueType_t type, const nvmlValue_t& v);

}  // namespace gpuledger::nvml
