// The writer's half of publication.h, apart from the reader's so that the injected tracer
// (libgpuledger-kerneltime.so) links no formatting library into tenants' processes.
#include "sources/kerneltime/publication.h"

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
