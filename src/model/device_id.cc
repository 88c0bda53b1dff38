#include "model/device_id.h"

#include <cstddef>

namespace gpuledger {

std::string_view BaseDeviceId(std::string_view device_id) {
  if (auto pos = device_id.find("::"); pos != std::string_view::npos)
    return device_id.substr(0, pos);
  if (auto pos = device_id.rfind("/vgpu"); pos != std::string_view::npos)
    return device_id.substr(0, pos);
  // HAMi's slots of one GPU: a canonical "GPU-<8-4-4-4-12 hex>" followed by "-<n>".
  constexpr std::size_t kUuidIdLength = 4 + 36;
  if (device_id.starts_with("GPU-") && device_id.size() > kUuidIdLength + 1 &&
      device_id[kUuidIdLength] == '-' && device_id[12] == '-' && device_id[17] == '-' &&
      device_id.substr(kUuidIdLength + 1).find_first_not_of("0123456789") == std::string_view::npos)
    return device_id.substr(0, kUuidIdLength);
  return device_id;
}

}  // namespace gpuledger
