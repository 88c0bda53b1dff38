#pragma once
// Device ids as device plugins hand them out, reduced to the device they name.

#include <string_view>

namespace gpuledger {

// "GPU-x::3" -> "GPU-x"; "nvidia0/vgpu2" -> "nvidia0"; HAMi's "GPU-<uuid>-2" -> "GPU-<uuid>";
// anything else unchanged.
std::string_view BaseDeviceId(std::string_view device_id);

}  // namespace gpuledger
