#include "sources/nvml/nvml_api.h"

#include <dlfcn.h>

#include <utility>

namespace gpuledger::nvml {
namespace {

class PosixDynamicLibrary final : public DynamicLibrary {
 public:
  PosixDynamicLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  ~PosixDynamicLibrary() override { dlclose(handle_); }
  PosixDynamicLibrary(const PosixDynamicLibrary&) = delete;
  PosixDynamicLibrary& operator=(const PosixDynamicLibrary&) = delete;

  void* Symbol(const char* name) override { return dlsym(handle_, name); }
  std::string Path() const override { return path_; }

 private:
  void* handle_;
  std::string path_;
};

template <typename Fn>
void Resolve(DynamicLibrary& library, const char* symbol, Fn& slot) {
  // POSIX guarantees a data pointer from dlsym converts to a function pointer.
  slot = reinterpret_cast<Fn>(library.Symbol(symbol));
}

}  // namespace

Result<std::unique_ptr<DynamicLibrary>> OpenDynamicLibrary(const std::string& path) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return NotFound("dlopen(" + path + "): " + (why != nullptr ? why : "unknown error"));
  }
  return std::unique_ptr<DynamicLibrary>(new PosixDynamicLibrary(handle, path));
}

Result<NvmlApi> LoadNvml(std::shared_ptr<DynamicLibrary> library) {
  NvmlApi api;
  DynamicLibrary& lib = *library;
  Resolve(lib, "nvmlInit_v2", api.init);
  Resolve(lib, "nvmlShutdown", api.shutdown);
  Resolve(lib, "nvmlDeviceGetCount_v2", api.device_count);
  Resolve(lib, "nvmlDeviceGetHandleByIndex_v2", api.handle_by_index);
  Resolve(lib, "nvmlDeviceGetUUID", api.uuid);
  Resolve(lib, "nvmlDeviceGetName", api.name);
  Resolve(lib, "nvmlDeviceGetMemoryInfo", api.memory_info);
  const std::pair<const char*, const void*> required[] = {
      {"nvmlInit_v2", reinterpret_cast<const void*>(api.init)},
      {"nvmlShutdown", reinterpret_cast<const void*>(api.shutdown)},
      {"nvmlDeviceGetCount_v2", reinterpret_cast<const void*>(api.device_count)},
      {"nvmlDeviceGetHandleByIndex_v2", reinterpret_cast<const void*>(api.handle_by_index)},
      {"nvmlDeviceGetUUID", reinterpret_cast<const void*>(api.uuid)},
      {"nvmlDeviceGetName", reinterpret_cast<const void*>(api.name)},
      {"nvmlDeviceGetMemoryInfo", reinterpret_cast<const void*>(api.memory_info)},
  };
  for (const auto& [symbol, address] : required) {
    if (address == nullptr) {
      return NotFound(lib.Path() + ": required NVML symbol " + symbol + " not found");
    }
  }
  Resolve(lib, "nvmlErrorString", api.error_string);
  Resolve(lib, "nvmlSystemGetDriverVersion", api.driver_version);
  Resolve(lib, "nvmlDeviceGetUtilizationRates", api.utilization_rates);
  Resolve(lib, "nvmlDeviceGetSamples", api.samples);
  Resolve(lib, "nvmlDeviceGetProcessUtilization", api.process_utilization);
  Resolve(lib, "nvmlDeviceGetProcessesUtilizationInfo", api.processes_utilization_info);
  Resolve(lib, "nvmlDeviceGetComputeRunningProcesses_v3", api.compute_processes);
  Resolve(lib, "nvmlDeviceGetMPSComputeRunningProcesses_v3", api.mps_compute_processes);
  Resolve(lib, "nvmlDeviceGetTotalEnergyConsumption", api.total_energy);
  Resolve(lib, "nvmlDeviceGetPowerUsage", api.power_usage);
  Resolve(lib, "nvmlDeviceGetMigMode", api.mig_mode);
  Resolve(lib, "nvmlDeviceGetMaxMigDeviceCount", api.max_mig_device_count);
  Resolve(lib, "nvmlDeviceGetMigDeviceHandleByIndex", api.mig_device_handle_by_index);
  Resolve(lib, "nvmlDeviceGetGpuInstanceId", api.gpu_instance_id);
  Resolve(lib, "nvmlDeviceGetDeviceHandleFromMigDeviceHandle", api.parent_of_mig_device);
  Resolve(lib, "nvmlDeviceGetAttributes_v2", api.attributes);
  Resolve(lib, "nvmlGpmQueryDeviceSupport", api.gpm_query_device_support);
  Resolve(lib, "nvmlGpmSampleAlloc", api.gpm_sample_alloc);
  Resolve(lib, "nvmlGpmSampleFree", api.gpm_sample_free);
  Resolve(lib, "nvmlGpmSampleGet", api.gpm_sample_get);
  Resolve(lib, "nvmlGpmMigSampleGet", api.gpm_mig_sample_get);
  Resolve(lib, "nvmlGpmMetricsGet", api.gpm_metrics_get);
  api.library = std::move(library);
  return api;
}

Result<NvmlApi> LoadNvml(const std::string& library) {
  auto opened = OpenDynamicLibrary(library);
  if (!opened) {
    return opened.error();
  }
  return LoadNvml(std::shared_ptr<DynamicLibrary>(std::move(*opened)));
}

std::string ErrorName(nvmlReturn_t code) {
  switch (code) {
    case NVML_SUCCESS:
      return "SUCCESS";
    case NVML_ERROR_UNINITIALIZED:
      return "UNINITIALIZED";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case NVML_ERROR_NOT_SUPPORTED:
      return "NOT_SUPPORTED";
    case NVML_ERROR_NO_PERMISSION:
      return "NO_PERMISSION";
    case NVML_ERROR_ALREADY_INITIALIZED:
      return "ALREADY_INITIALIZED";
    case NVML_ERROR_NOT_FOUND:
      return "NOT_FOUND";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "INSUFFICIENT_SIZE";
    case NVML_ERROR_INSUFFICIENT_POWER:
      return "INSUFFICIENT_POWER";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "DRIVER_NOT_LOADED";
    case NVML_ERROR_TIMEOUT:
      return "TIMEOUT";
    case NVML_ERROR_IRQ_ISSUE:
      return "IRQ_ISSUE";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      return "LIBRARY_NOT_FOUND";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "FUNCTION_NOT_FOUND";
    case NVML_ERROR_CORRUPTED_INFOROM:
      return "CORRUPTED_INFOROM";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU_IS_LOST";
    case NVML_ERROR_RESET_REQUIRED:
      return "RESET_REQUIRED";
    case NVML_ERROR_OPERATING_SYSTEM:
      return "OPERATING_SYSTEM";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "LIB_RM_VERSION_MISMATCH";
    case NVML_ERROR_IN_USE:
      return "IN_USE";
    case NVML_ERROR_MEMORY:
      return "MEMORY";
    case NVML_ERROR_NO_DATA:
      return "NO_DATA";
    case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED:
      return "VGPU_ECC_NOT_SUPPORTED";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return "INSUFFICIENT_RESOURCES";
    case NVML_ERROR_FREQ_NOT_SUPPORTED:
      return "FREQ_NOT_SUPPORTED";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "ARGUMENT_VERSION_MISMATCH";
    case NVML_ERROR_DEPRECATED:
      return "DEPRECATED";
    case NVML_ERROR_NOT_READY:
      return "NOT_READY";
    case NVML_ERROR_GPU_NOT_FOUND:
      return "GPU_NOT_FOUND";
    case NVML_ERROR_INVALID_STATE:
      return "INVALID_STATE";
    case NVML_ERROR_UNKNOWN:
      return "UNKNOWN";
  }
  return "ERROR_" + std::to_string(static_cast<int>(code));
}

}  // namespace gpuledger::nvml
