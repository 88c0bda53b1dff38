#include "sources/kerneltime/publication.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>

namespace gpuledger::kerneltime {
namespace {

// The sequence words are read by another process through the page cache: stores are ordered
// with release semantics so the fields land between the two marks.
void StoreSeq(std::uint64_t& word, std::uint64_t value) {
  std::atomic_ref<std::uint64_t>(word).store(value, std::memory_order_release);
}

}  // namespace

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
  Publication p;
  p.pid = f.pid;
  p.errors = f.errors;
  p.flags = f.flags;
  p.started_unix_ns = f.started_unix_ns;
  p.updated_unix_ns = f.updated_unix_ns;
  p.seq = f.seq_begin;
  for (std::uint32_t i = 0; i < f.device_count; ++i) {
    const DeviceRecord& d = f.devices[i];
    const char* end = static_cast<const char*>(std::memchr(d.uuid, '\0', kUuidBytes));
    if (end == nullptr)
      return InvalidArgument(fmt::format("{}: device {}: its UUID is not terminated", path, i));
    p.devices.push_back({std::string(d.uuid, end), d.busy_ns, d.kernels, d.clipped_ns});
  }
  return p;
}

void WritePublication(const Publication& p, FileLayout& out) {
  const std::uint64_t seq = out.seq_begin % 2 == 0 ? out.seq_begin : out.seq_begin + 1;
  StoreSeq(out.seq_end, seq + 1);  // odd: writing
  // The mark above is visible before any field below changes (a seqlock writer's fence).
  std::atomic_thread_fence(std::memory_order_release);
  std::memcpy(out.magic, kMagic, sizeof kMagic);
  out.version = kFormatVersion;
  const std::size_t n = std::min(p.devices.size(), kMaxDevices);
  out.device_count = static_cast<std::uint32_t>(n);
  out.pid = p.pid;
  out.errors = p.errors + (p.devices.size() - n);
  out.flags = p.flags;
  out.started_unix_ns = p.started_unix_ns;
  out.updated_unix_ns = p.updated_unix_ns;
  for (std::size_t i = 0; i < kMaxDevices; ++i) {
    DeviceRecord& d = out.devices[i];
    std::memset(&d, 0, sizeof d);
    if (i >= n) continue;
    const std::string& uuid = p.devices[i].uuid;
    std::memcpy(d.uuid, uuid.data(), std::min(uuid.size(), kUuidBytes - 1));
    d.busy_ns = p.devices[i].busy_ns;
    d.kernels = p.devices[i].kernels;
    d.clipped_ns = p.devices[i].clipped_ns;
  }
  StoreSeq(out.seq_begin, seq + 2);
  StoreSeq(out.seq_end, seq + 2);
}

}  // namespace gpuledger::kerneltime
