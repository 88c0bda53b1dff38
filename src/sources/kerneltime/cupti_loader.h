#pragma once
// Finding CUPTI and the CUDA driver from inside a traced process (issue 31), for the injected
// tracer only: plain dlopen/dlsym, no project libraries (they would be linked into tenants'
// processes).
//
// Which libcupti, first found wins:
//   1. GPULEDGER_CUPTI_PATH, when set (an operator's override);
//   2. one the process has already loaded (PyTorch links its own): the matching version for the
//      process's CUDA, and one CUPTI per process;
//   3. libcupti.so beside libgpuledger-kerneltime.so (the copy the node's installation bundles);
//   4. the loader's own search (LD_LIBRARY_PATH, the CUDA toolkit in -devel images).

#include <cstdint>
#include <string>

#include "sources/kerneltime/cupti_abi.h"

namespace gpuledger::kerneltime {

struct CuptiApi {
  void* handle = nullptr;  // never closed: CUPTI stays loaded for the life of the process
  std::string path;        // where it was found, for the one line a failure prints
  cuptiSubscribe_fn subscribe = nullptr;
  cuptiUnsubscribe_fn unsubscribe = nullptr;
  cuptiActivityRegisterCallbacks_fn register_callbacks = nullptr;
  cuptiActivityEnable_fn enable = nullptr;
  cuptiActivityDisable_fn disable = nullptr;
  cuptiActivityGetNextRecord_fn next_record = nullptr;
  cuptiActivityGetNumDroppedRecords_fn dropped_records = nullptr;
  cuptiActivityFlushAll_fn flush_all = nullptr;
};

// The CUPTI to trace with, every entry above resolved; on failure `error` says what was tried.
bool LoadCupti(const char* explicit_path, CuptiApi& api, std::string& error);

// The driver the process already runs (libcuda.so.1 is loaded before the driver calls the
// injection). Entries are null when it is not loaded or lacks them.
struct CudaDriverApi {
  cuDeviceGet_fn device_get = nullptr;
  cuDeviceGetUuid_fn uuid_v2 = nullptr;
  cuDeviceGetUuid_fn uuid_v1 = nullptr;
};
CudaDriverApi FindCudaDriver();

// NVML's spelling of a device UUID: "GPU-" (or "MIG-") and the 16 bytes as 8-4-4-4-12 hex digits.
std::string FormatUuid(const CUuuid& uuid, bool mig);

// The UUID of CUDA device `ordinal` as NVML names it, or "" when the driver cannot say.
std::string DeviceUuid(const CudaDriverApi& cuda, std::uint32_t ordinal);

}  // namespace gpuledger::kerneltime
