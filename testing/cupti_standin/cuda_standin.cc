// Test-only libcuda.so.1 (README.md): the three driver entry points the kernel-time tracer calls
// to name a device ordinal by its UUID. GPULEDGER_FAKE_CUDA_DEVICES (default 2) devices; device n's
// UUID is 16 bytes of 0x10+n, and with GPULEDGER_FAKE_CUDA_MIG set each is a MIG instance: the
// first-version call then answers its parent GPU's UUID (bytes 0xa0+n), as on a MIG device.

#include <cstdlib>
#include <cstring>

#include "sources/kerneltime/cupti_abi.h"

namespace {

int DeviceCount() {
  const char* v = std::getenv("GPULEDGER_FAKE_CUDA_DEVICES");
  return v != nullptr ? std::atoi(v) : 2;
}

bool Mig() {
  const char* v = std::getenv("GPULEDGER_FAKE_CUDA_MIG");
  return v != nullptr && v[0] == '1';
}

}  // namespace

// NOLINTBEGIN(readability-identifier-naming): the driver's names.
extern "C" {

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (ordinal < 0 || ordinal >= DeviceCount()) return 101;  // CUDA_ERROR_INVALID_DEVICE
  *device = ordinal;
  return 0;
}

CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice device) {
  if (device < 0 || device >= DeviceCount()) return 101;
  std::memset(uuid->bytes, 0x10 + device, sizeof uuid->bytes);
  return 0;
}

CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice device) {
  if (device < 0 || device >= DeviceCount()) return 101;
  std::memset(uuid->bytes, (Mig() ? 0xa0 : 0x10) + device, sizeof uuid->bytes);
  return 0;
}

}  // extern "C"
// NOLINTEND(readability-identifier-naming)
