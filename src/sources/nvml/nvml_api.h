#pragma once
// The NVML entry points gpuledger calls, as a table of C function pointers resolved with dlsym
// from libnvidia-ml.so.1 (style rule 10). Tests fill the table with capture-less lambdas; no GPU
// or .so is needed. Optional entries may be null: the caller treats a null entry like
// NVML_ERROR_NOT_SUPPORTED (FUNCTION_NOT_FOUND in faults).

#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"
#include "sources/nvml/nvml.h"

namespace gpuledger::nvml {

// A loaded shared object. The seam between the loader and dlopen: a test passes a fake that
// answers from a table of symbols. Thread-compatible; Symbol() does not call into the library.
class DynamicLibrary {
 public:
  virtual ~DynamicLibrary() = default;
  // The address of `name`, or null when the library does not export it.
  virtual void* Symbol(const char* name) = 0;
  virtual std::string Path() const = 0;
};

// dlopen(path, RTLD_NOW | RTLD_LOCAL). kNotFound (message carries dlerror()) when it cannot be
// loaded. The returned object dlcloses on destruction.
Result<std::unique_ptr<DynamicLibrary>> OpenDynamicLibrary(const std::string& path);

struct NvmlApi {
  // Keeps the library mapped while any copy of the table (or a hung call using it) lives.
  std::shared_ptr<DynamicLibrary> library;

  // Required: LoadNvml fails without them.
  nvmlInit_v2_fn init = nullptr;                               // nvmlInit_v2
  nvmlShutdown_fn shutdown = nullptr;                          // nvmlShutdown
  nvmlDeviceGetCount_v2_fn device_count = nullptr;             // nvmlDeviceGetCount_v2
  nvmlDeviceGetHandleByIndex_v2_fn handle_by_index = nullptr;  // nvmlDeviceGetHandleByIndex_v2
  nvmlDeviceGetUUID_fn uuid = nullptr;                         // nvmlDeviceGetUUID
  nvmlDeviceGetName_fn name = nullptr;                         // nvmlDeviceGetName
  nvmlDeviceGetMemoryInfo_fn memory_info = nullptr;            // nvmlDeviceGetMemoryInfo

  // Optional.
  nvmlErrorString_fn error_string = nullptr;                     // nvmlErrorString
  nvmlSystemGetDriverVersion_fn driver_version = nullptr;        // nvmlSystemGetDriverVersion
  nvmlDeviceGetUtilizationRates_fn utilization_rates = nullptr;  // nvmlDeviceGetUtilizationRates
  nvmlDeviceGetSamples_fn samples = nullptr;                     // nvmlDeviceGetSamples
  nvmlDeviceGetProcessUtilization_fn process_utilization = nullptr;
  nvmlDeviceGetProcessesUtilizationInfo_fn processes_utilization_info = nullptr;
  nvmlDeviceGetComputeRunningProcesses_v3_fn compute_processes = nullptr;
  nvmlDeviceGetMPSComputeRunningProcesses_v3_fn mps_compute_processes = nullptr;
  nvmlDeviceGetTotalEnergyConsumption_fn total_energy = nullptr;  // mJ since driver load
  nvmlDeviceGetPowerUsage_fn power_usage = nullptr;               // mW
  nvmlDeviceGetMigMode_fn mig_mode = nullptr;
  nvmlDeviceGetMaxMigDeviceCount_fn max_mig_device_count = nullptr;
  nvmlDeviceGetMigDeviceHandleByIndex_fn mig_device_handle_by_index = nullptr;
  nvmlDeviceGetGpuInstanceId_fn gpu_instance_id = nullptr;
  nvmlDeviceGetDeviceHandleFromMigDeviceHandle_fn parent_of_mig_device = nullptr;
  nvmlDeviceGetAttributes_v2_fn attributes = nullptr;  // nvmlDeviceGetAttributes_v2
  // GPM (Hopper and newer; R520+ drivers export them, older ones do not).
  nvmlGpmQueryDeviceSupport_fn gpm_query_device_support = nullptr;  // nvmlGpmQueryDeviceSupport
  nvmlGpmSampleAlloc_fn gpm_sample_alloc = nullptr;                 // nvmlGpmSampleAlloc
  nvmlGpmSampleFree_fn gpm_sample_free = nullptr;                   // nvmlGpmSampleFree
  nvmlGpmSampleGet_fn gpm_sample_get = nullptr;                     // nvmlGpmSampleGet
  nvmlGpmMigSampleGet_fn gpm_mig_sample_get = nullptr;              // nvmlGpmMigSampleGet
  nvmlGpmMetricsGet_fn gpm_metrics_get = nullptr;                   // nvmlGpmMetricsGet
};

// Resolves the table from an opened library; the table shares ownership of it. kNotFound naming
// the first missing required symbol.
Result<NvmlApi> LoadNvml(std::shared_ptr<DynamicLibrary> library);
// OpenDynamicLibrary + LoadNvml.
Result<NvmlApi> LoadNvml(const std::string& library);

// "GPU_IS_LOST" for NVML_ERROR_GPU_IS_LOST, "SUCCESS", ...; "ERROR_<n>" for unknown values.
std::string ErrorName(nvmlReturn_t code);

}  // namespace gpuledger::nvml
