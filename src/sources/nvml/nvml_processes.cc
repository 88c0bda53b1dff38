// The NVML source's sampled streams and process lists: GPU-utilization samples, per-process
// samples (the current entry point, else the legacy one), and the compute and MPS process lists.
#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "sources/nvml/nvml_source_impl.h"

namespace gpuledger::nvml::impl {

std::optional<std::vector<UtilSample>> NvmlGpuSource::ReadUtilSamples(Work& w, DeviceState& d) {
  constexpr const char* kFn = "nvmlDeviceGetSamples";
  if (!Supported(d, kFn, false) || api_.samples == nullptr) {
    return std::nullopt;  // absent symbol: fall back silently to utilization rates
  }
  struct Box {
    nvmlValueType_t type = NVML_VALUE_TYPE_UNSIGNED_INT;
    unsigned count = 0;
    std::vector<nvmlSample_t> buffer;
  };
  auto samples_fn = api_.samples;
  nvmlDevice_t handle = d.handle;
  const unsigned long long last_seen = QueryTimestamp(d.util_cursor, w.step);
  Box box;
  nvmlReturn_t ret = NVML_ERROR_INSUFFICIENT_SIZE;
  for (int attempt = 0; attempt < kMaxGrowAttempts && ret == NVML_ERROR_INSUFFICIENT_SIZE;
       ++attempt) {
    box = Box{NVML_VALUE_TYPE_UNSIGNED_INT, d.sample_capacity,
              std::vector<nvmlSample_t>(d.sample_capacity)};
    ret = Call(w, std::string(kFn) + "(" + d.uuid + ")", box, [=](Box& b) {
      return samples_fn(handle, NVML_GPU_UTILIZATION_SAMPLES, last_seen, &b.type, &b.count,
                        b.buffer.data());
    });
    if (ret == NVML_ERROR_INSUFFICIENT_SIZE) {
      d.sample_capacity =
          std::min(std::max(box.count, d.sample_capacity) + kGrowMargin, kMaxEntries);
    }
  }
  if (ret == NVML_ERROR_NOT_FOUND) {
    return std::vector<UtilSample>{};
  }
  if (ret != NVML_SUCCESS) {
    Note(w, d, kFn, false, d.uuid, ret);
    return std::nullopt;
  }
  std::vector<UtilSample> out;
  const unsigned n = std::min<unsigned>(box.count, box.buffer.size());
  for (unsigned i = 0; i < n; ++i) {
    out.push_back({box.buffer[i].timeStamp, 0, SampleValue(box.type, box.buffer[i].sampleValue)});
  }
  return out;
}

std::optional<std::vector<UtilSample>> NvmlGpuSource::ReadProcessSamples(Work& w, DeviceState& d) {
  constexpr const char* kInfoFn = "nvmlDeviceGetProcessesUtilizationInfo";
  constexpr const char* kLegacyFn = "nvmlDeviceGetProcessUtilization";
  nvmlDevice_t handle = d.handle;
  const unsigned long long last_seen = QueryTimestamp(d.process_cursor, w.step);
  if (api_.processes_utilization_info != nullptr && !d.legacy_process_util) {
    struct Box {
      nvmlProcessesUtilizationInfo_t info{};
      std::vector<nvmlProcessUtilizationInfo_v1_t> buffer;
    };
    auto fn = api_.processes_utilization_info;
    Box box;
    nvmlReturn_t ret = NVML_ERROR_INSUFFICIENT_SIZE;
    for (int attempt = 0; attempt < kMaxGrowAttempts && ret == NVML_ERROR_INSUFFICIENT_SIZE;
         ++attempt) {
      box = Box{};
      box.buffer.resize(d.process_sample_capacity);
      box.info.version = nvmlProcessesUtilizationInfo_v1;
      box.info.processSamplesCount = d.process_sample_capacity;
      box.info.lastSeenTimeStamp = last_seen;
      ret = Call(w, std::string(kInfoFn) + "(" + d.uuid + ")", box, [=](Box& b) {
        b.info.procUtilArray = b.buffer.data();
        return fn(handle, &b.info);
      });
      if (ret == NVML_ERROR_INSUFFICIENT_SIZE) {
        d.process_sample_capacity = std::min(
            std::max(box.info.processSamplesCount, d.process_sample_capacity) + kGrowMargin,
            kMaxEntries);
      }
    }
    if (ret == NVML_SUCCESS || ret == NVML_ERROR_NOT_FOUND) {
      std::vector<UtilSample> out;
      if (ret == NVML_SUCCESS) {
        const unsigned n = std::min<unsigned>(box.info.processSamplesCount, box.buffer.size());
        for (unsigned i = 0; i < n; ++i) {
          const auto& e = box.buffer[i];
          out.push_back({e.timeStamp, e.pid, static_cast<double>(e.smUtil)});
        }
      }
      return out;
    }
    if (ret == NVML_ERROR_NOT_SUPPORTED || ret == NVML_ERROR_FUNCTION_NOT_FOUND ||
        ret == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
      d.legacy_process_util = true;  // this driver or device: use the older entry point
    } else {
      Note(w, d, kInfoFn, false, d.uuid, ret);
      return std::nullopt;
    }
  }
  if (!Supported(d, kLegacyFn, false)) {
    return std::nullopt;
  }
  if (api_.process_utilization == nullptr) {
    Note(w, d, kLegacyFn, false, d.uuid, NVML_ERROR_FUNCTION_NOT_FOUND);
    return std::nullopt;
  }
  struct Box {
    unsigned count = 0;
    std::vector<nvmlProcessUtilizationSample_t> buffer;
  };
  auto fn = api_.process_utilization;
  Box box;
  nvmlReturn_t ret = NVML_ERROR_INSUFFICIENT_SIZE;
  for (int attempt = 0; attempt < kMaxGrowAttempts && ret == NVML_ERROR_INSUFFICIENT_SIZE;
       ++attempt) {
    box = Box{d.process_sample_capacity,
              std::vector<nvmlProcessUtilizationSample_t>(d.process_sample_capacity)};
    ret = Call(w, std::string(kLegacyFn) + "(" + d.uuid + ")", box,
               [=](Box& b) { return fn(handle, b.buffer.data(), &b.count, last_seen); });
    if (ret == NVML_ERROR_INSUFFICIENT_SIZE) {
      d.process_sample_capacity =
          std::min(std::max(box.count, d.process_sample_capacity) + kGrowMargin, kMaxEntries);
    }
  }
  if (ret == NVML_ERROR_NOT_FOUND) {
    return std::vector<UtilSample>{};
  }
  if (ret != NVML_SUCCESS) {
    Note(w, d, kLegacyFn, false, d.uuid, ret);
    return std::nullopt;
  }
  std::vector<UtilSample> out;
  const unsigned n = std::min<unsigned>(box.count, box.buffer.size());
  for (unsigned i = 0; i < n; ++i) {
    const auto& e = box.buffer[i];
    out.push_back({e.timeStamp, e.pid, static_cast<double>(e.smUtil)});
  }
  return out;
}

void NvmlGpuSource::ListProcesses(Work& w, DeviceState& d, nvmlDevice_t handle,
                                  const std::string& subject, bool mig,
                                  std::vector<ProcessEntry>& out) {
  struct Entry {
    const char* name;
    nvmlDeviceGetComputeRunningProcesses_v3_fn fn;
  };
  const Entry entries[] = {
      {"nvmlDeviceGetComputeRunningProcesses_v3", api_.compute_processes},
      {"nvmlDeviceGetMPSComputeRunningProcesses_v3", api_.mps_compute_processes},
  };
  for (const auto& [fn_name, fn] : entries) {
    if (!Supported(d, fn_name, mig)) {
      continue;
    }
    if (fn == nullptr) {
      Note(w, d, fn_name, mig, subject, NVML_ERROR_FUNCTION_NOT_FOUND);
      continue;
    }
    struct Box {
      unsigned count = 0;
      std::vector<nvmlProcessInfo_t> buffer;
    };
    Box box;
    nvmlReturn_t ret = NVML_ERROR_INSUFFICIENT_SIZE;
    for (int attempt = 0; attempt < kMaxGrowAttempts && ret == NVML_ERROR_INSUFFICIENT_SIZE;
         ++attempt) {
      box = Box{d.process_capacity, std::vector<nvmlProcessInfo_t>(d.process_capacity)};
      std::memset(static_cast<void*>(box.buffer.data()), kSentinel,
                  box.buffer.size() * sizeof(nvmlProcessInfo_t));
      ret = Call(w, std::string(fn_name) + "(" + subject + ")", box,
                 [fn = fn, handle](Box& b) { return fn(handle, &b.count, b.buffer.data()); });
      if (ret == NVML_ERROR_INSUFFICIENT_SIZE) {
        d.process_capacity =
            std::min(std::max(box.count, d.process_capacity) + kGrowMargin, kMaxEntries);
      }
    }
    if (ret != NVML_SUCCESS) {
      Note(w, d, fn_name, mig, subject, ret);
      if (ret == NVML_ERROR_GPU_IS_LOST || w.timed_out) {
        return;
      }
      continue;
    }
    const bool mps_list = fn == api_.mps_compute_processes;
    for (ProcessEntry e :
         ParseProcessInfos(box.buffer.data(), box.buffer.size(), box.count, kSentinel)) {
      e.mps_client = mps_list;
      auto same = std::find_if(out.begin(), out.end(),
                               [&](const ProcessEntry& o) { return o.pid == e.pid; });
      if (same == out.end()) {
        out.push_back(e);
      } else {
        same->used_memory_bytes = std::max(same->used_memory_bytes, e.used_memory_bytes);
        same->mps_client = same->mps_client || e.mps_client;
      }
    }
  }
}

}  // namespace gpuledger::nvml::impl
