// The NVML source on a GPU in MIG mode: each MIG device's identity, profile, memory, GPM
// signals and processes (NVML has no per-process utilization on MIG).
#include <array>
#include <string>
#include <vector>

#include "sources/nvml/nvml_source_impl.h"

namespace gpuledger::nvml::impl {

void NvmlGpuSource::ReadMig(Work& w, DeviceState& d, bool baseline, std::vector<MigInstance>& migs,
                            std::vector<DeviceSignals>& signals,
                            std::vector<ProcessObservation>& processes) {
  nvmlDevice_t parent = d.handle;
  auto max_fn = api_.max_mig_device_count;
  auto max = Get<unsigned>(w, d, "nvmlDeviceGetMaxMigDeviceCount", max_fn != nullptr, false, d.uuid,
                           [max_fn, parent](unsigned& c) { return max_fn(parent, &c); });
  if (!max || !d.lost_call.empty()) {
    return;
  }
  constexpr const char* kByIndex = "nvmlDeviceGetMigDeviceHandleByIndex";
  if (api_.mig_device_handle_by_index == nullptr) {
    Note(w, d, kByIndex, false, d.uuid, NVML_ERROR_FUNCTION_NOT_FOUND);
    return;
  }
  auto by_index = api_.mig_device_handle_by_index;
  auto uuid_fn = api_.uuid;
  auto name_fn = api_.name;
  auto memory_fn = api_.memory_info;
  auto attributes_fn = api_.attributes;
  for (unsigned i = 0; i < *max && d.lost_call.empty() && !w.timed_out; ++i) {
    const std::string where = d.uuid + " MIG " + std::to_string(i);
    nvmlDevice_t mig = nullptr;
    nvmlReturn_t ret =
        Call(w, std::string(kByIndex) + "(" + where + ")", mig,
             [by_index, parent, i](nvmlDevice_t& m) { return by_index(parent, i, &m); });
    if (ret == NVML_ERROR_NOT_FOUND || ret == NVML_ERROR_INVALID_ARGUMENT) {
      continue;  // an empty slot
    }
    if (ret != NVML_SUCCESS) {
      Note(w, d, kByIndex, false, where, ret);
      continue;
    }
    std::array<char, NVML_DEVICE_UUID_V2_BUFFER_SIZE> uuid_buf{};
    ret = Call(w, "nvmlDeviceGetUUID(" + where + ")", uuid_buf,
               [uuid_fn, mig](auto& b) { return uuid_fn(mig, b.data(), b.size()); });
    if (ret != NVML_SUCCESS) {
      Note(w, d, "nvmlDeviceGetUUID", true, where, ret);
      continue;
    }
    const std::string mig_uuid = CString(uuid_buf);
    std::array<char, NVML_DEVICE_NAME_V2_BUFFER_SIZE> name_buf{};
    ret = Call(w, "nvmlDeviceGetName(" + mig_uuid + ")", name_buf,
               [name_fn, mig](auto& b) { return name_fn(mig, b.data(), b.size()); });
    std::string name;
    if (ret == NVML_SUCCESS) {
      name = CString(name_buf);
    } else {
      Note(w, d, "nvmlDeviceGetName", true, mig_uuid, ret);
    }
    nvmlMemory_t memory{};
    ret = Call(w, "nvmlDeviceGetMemoryInfo(" + mig_uuid + ")", memory,
               [memory_fn, mig](nvmlMemory_t& m) { return memory_fn(mig, &m); });
    const bool have_memory = ret == NVML_SUCCESS;
    if (!have_memory) {
      Note(w, d, "nvmlDeviceGetMemoryInfo", true, mig_uuid, ret);
    }
    auto attributes = Get<nvmlDeviceAttributes_t>(
        w, d, "nvmlDeviceGetAttributes_v2", attributes_fn != nullptr, true, mig_uuid,
        [attributes_fn, mig](nvmlDeviceAttributes_t& a) { return attributes_fn(mig, &a); });
    if (!d.lost_call.empty()) {
      return;
    }
    MigInstance instance;
    instance.uuid = GpuUuid{mig_uuid};
    instance.parent = GpuUuid{d.uuid};
    instance.profile = ParseMigProfile(name);
    if (attributes && attributes->gpuInstanceSliceCount > 0) {
      instance.compute_slices = static_cast<int>(attributes->gpuInstanceSliceCount);
      if (instance.profile.empty()) {
        instance.profile = std::to_string(attributes->gpuInstanceSliceCount) + "g." +
                           std::to_string((attributes->memorySizeMB + 1023) / 1024) + "gb";
      }
    } else if (int slices = ProfileSlices(instance.profile); slices > 0) {
      instance.compute_slices = slices;
    }
    instance.memory_total_bytes =
        have_memory ? static_cast<Bytes>(memory.total)
                    : (attributes ? static_cast<Bytes>(attributes->memorySizeMB) * kMiB : 0);
    // The GPU instance id: GPM samples the parent GPU by it, and DCGM names instances by it.
    auto gi_fn = api_.gpu_instance_id;
    auto gi = Get<unsigned>(w, d, "nvmlDeviceGetGpuInstanceId", gi_fn != nullptr, true, mig_uuid,
                            [gi_fn, mig](unsigned& id) { return gi_fn(mig, &id); });
    if (gi) instance.gpu_instance_id = static_cast<int>(*gi);
    migs.push_back(instance);
    GpmReadout gpm;
    if (d.gpm && gi && d.lost_call.empty()) gpm = ReadGpm(w, d, *gi, mig_uuid);
    if (!baseline) {
      DeviceSignals signal;
      signal.device = instance.uuid;
      signal.memory_used_bytes = have_memory ? static_cast<Bytes>(memory.used) : 0;
      if (gpm.graphics_us) {
        signal.busy_us = gpm.graphics_us;
        signal.busy_source = SignalSource::kGpm;
      }
      if (gpm.activity) {
        signal.activity = gpm.activity;
        signal.activity_source = SignalSource::kGpm;
      }
      signals.push_back(std::move(signal));
    }
    std::vector<ProcessEntry> entries;
    ListProcesses(w, d, mig, mig_uuid, true, entries);
    for (const auto& e : entries) {
      ProcessObservation p;
      p.pid = static_cast<int>(e.pid);
      p.device = instance.uuid;
      p.used_memory_bytes = e.used_memory_bytes;
      p.mps_client = e.mps_client;
      processes.push_back(std::move(p));  // NVML has no per-process utilization on MIG
    }
  }
}

}  // namespace gpuledger::nvml::impl
