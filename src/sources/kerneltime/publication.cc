#include "sources/kerneltime/publication.h"

#include <fmt/format.h>

#include <cstring>

namespace gpuledger::kerneltime {

Result<Publication> DecodePublication(std::string_view bytes, std::string_view path) {
  if (bytes.size() != sizeof(FileLayout))
    return InvalidArgument(fmt::format("{}: {} bytes, a kernel-time file of version {} has {}",
                                       path, bytes.size(), kFormatVersion, sizeof(FileLayout)));
  FileLayout f;
  std::memcpy(&f, bytes.data(), sizeof f);
  if (std::memcmp(f.magic, kMagic, sizeof kMagic) != 0)
    return InvalidArgument(fmt::format("{}: not a gpuledger kernel-time file", path));
  if (f.version != kFormatVersion)
    return InvalidArgument(
        fmt::format("{}: format version {}, this build reads {}", path, f.version, kFormatVersion));
  if (f.seq_begin != f.seq_end || f.seq_begin % 2 != 0)
    return Unavailable(fmt::format("{}: read while being written", path));
  if (f.device_count > kMaxDevices)
    return InvalidArgument(
        fmt::format("{}: {} devices, at most {}", path, f.device_count, kMaxDevices));
  Publication p{.pid = f.pid,
                .errors = f.errors,
                .flags = f.flags,
                .started_unix_ns = f.started_unix_ns,
                .updated_unix_ns = f.updated_unix_ns,
                .seq = f.seq_begin};
  for (std::uint32_t i = 0; i < f.device_count; ++i) {
    const DeviceRecord& d = f.devices[i];
    const char* end = static_cast<const char*>(std::memchr(d.uuid, '\0', kUuidBytes));
    if (end == nullptr)
      return InvalidArgument(fmt::format("{}: device {}: its UUID is not terminated", path, i));
    p.devices.push_back({std::string(d.uuid, end), d.busy_ns, d.kernels, d.clipped_ns});
  }
  return p;
}

Result<Publication> ReadPublication(const std::function<Result<std::string>()>& read,
                                    std::string_view path) {
  auto first = read();
  if (!first) return first.error();
  auto second = read();
  if (!second) return second.error();
  if (*first != *second) return Unavailable(fmt::format("{}: read while being written", path));
  return DecodePublication(*second, path);
}

}  // namespace gpuledger::kerneltime
