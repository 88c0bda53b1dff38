#include "sources/kerneltime/kernel_time_reader.h"

#include <algorithm>

#include "sources/kerneltime/publication.h"

namespace gpuledger::kerneltime {
namespace {

// A pod UID as the kubelet writes it: hex digits and dashes (never a path of its own).
bool IsPodUid(const std::string& uid) {
  return !uid.empty() && uid.size() <= 64 && std::all_of(uid.begin(), uid.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == '-' ||
           c == '_';
  });
}

// The tracer names a device through the CUDA driver, which gives 16 bytes and no word on MIG:
// its "GPU-"/"MIG-" prefix is a best guess (cupti_abi.h), so a record matches NVML's device by
// the bytes alone. GPU and MIG UUIDs are drawn from one space: the bytes never name two devices.
bool SameDevice(const std::string& published, const std::string& nvml) {
  auto bytes = [](const std::string& uuid) {
    return uuid.rfind("GPU-", 0) == 0 || uuid.rfind("MIG-", 0) == 0 ? uuid.substr(4) : uuid;
  };
  return published == nvml || bytes(published) == bytes(nvml);
}

}  // namespace

void KernelTimeReader::Annotate(std::vector<ProcessObservation>& processes) {
  std::map<Key, Last> seen;
  for (ProcessObservation& p : processes) {
    if (!p.consumer || !IsPodUid(p.consumer->pod_uid.value) || p.pid <= 0) continue;
    // The tracer knows itself by its PID in the container's namespace: the file is named by it.
    const int own_pid = p.namespace_pid > 0 ? p.namespace_pid : p.pid;
    const std::string path = dir_ + "/" + p.consumer->pod_uid.value + "/" + std::to_string(own_pid);
    const Key key{p.consumer->pod_uid.value, p.pid, p.device.value};
    // A cycle without a reading keeps the last one, so the next is not a new baseline.
    if (auto it = last_.find(key); it != last_.end()) seen[key] = it->second;
    Result<Publication> pub = Unavailable("not read");
    for (int attempt = 0; attempt < 3; ++attempt) {
      pub = ReadPublication([&] { return files_.Read(path); }, path);
      if (pub || pub.error().code != ErrorCode::kUnavailable) break;
    }
    if (!pub) {
      if (pub.error().code != ErrorCode::kNotFound) ++stats_.files_refused;
      continue;
    }
    if (pub->pid != own_pid) {
      ++stats_.files_refused;
      continue;
    }
    ++stats_.files_read;
    if ((pub->flags & (kDisabled | kStoodAside)) != 0) {
      ++stats_.tracers_off;
      continue;
    }
    auto device =
        std::find_if(pub->devices.begin(), pub->devices.end(),
                     [&](const DeviceKernelTime& d) { return SameDevice(d.uuid, p.device.value); });
    if (device == pub->devices.end()) continue;
    const Last now{pub->started_unix_ns, device->busy_ns};
    if (auto it = last_.find(key); it != last_.end() &&
                                   it->second.started_unix_ns == now.started_unix_ns &&
                                   it->second.busy_ns <= now.busy_ns) {
      // µs of each cumulative reading, so no rounding accumulates.
      p.kernel_busy_us = static_cast<GpuMicros>(now.busy_ns / 1000) -
                         static_cast<GpuMicros>(it->second.busy_ns / 1000);
    }
    seen[key] = now;
  }
  last_ = std::move(seen);
}

}  // namespace gpuledger::kerneltime
