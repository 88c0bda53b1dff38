#include "sources/kerneltime/cupti_loader.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>

namespace gpuledger::kerneltime {
namespace {

// The sonames CUDA 11 to 13 ship CUPTI under, newest first, then the unversioned link.
constexpr const char* kCuptiNames[] = {"libcupti.so.13",   "libcupti.so.12",   "libcupti.so.11.8",
                                       "libcupti.so.11.7", "libcupti.so.11.6", "libcupti.so.11.5",
                                       "libcupti.so.11.4", "libcupti.so.11.3", "libcupti.so.11.2",
                                       "libcupti.so.11.1", "libcupti.so.11.0", "libcupti.so"};

template <typename Fn>
bool Resolve(void* handle, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(handle, name));
  return fn != nullptr;
}

bool ResolveAll(void* handle, CuptiApi& api, std::string& error) {
  api.handle = handle;
  const bool ok = Resolve(handle, "cuptiSubscribe", api.subscribe) &&
                  Resolve(handle, "cuptiUnsubscribe", api.unsubscribe) &&
                  Resolve(handle, "cuptiActivityRegisterCallbacks", api.register_callbacks) &&
                  Resolve(handle, "cuptiActivityEnable", api.enable) &&
                  Resolve(handle, "cuptiActivityDisable", api.disable) &&
                  Resolve(handle, "cuptiActivityGetNextRecord", api.next_record) &&
                  Resolve(handle, "cuptiActivityGetNumDroppedRecords", api.dropped_records) &&
                  Resolve(handle, "cuptiActivityFlushAll", api.flush_all);
  if (!ok) error = api.path + " lacks a CUPTI entry point this tracer needs";
  return ok;
}

// Opens `path` (dlopen's own search when it has no slash); `flags` may add RTLD_NOLOAD.
void* Open(const std::string& path, int flags) {
  return dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | flags);
}

// The directory this library was loaded from, with a trailing slash; "" when unknown.
std::string OwnDirectory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&OwnDirectory), &info) == 0 || info.dli_fname == nullptr)
    return "";
  const std::string self = info.dli_fname;
  const auto slash = self.rfind('/');
  return slash == std::string::npos ? "" : self.substr(0, slash + 1);
}

}  // namespace

bool LoadCupti(const char* explicit_path, CuptiApi& api, std::string& error) {
  auto attempt = [&](const std::string& path, int flags) {
    void* handle = Open(path, flags);
    if (handle == nullptr) return false;
    api.path = path;
    return ResolveAll(handle, api, error);
  };
  if (explicit_path != nullptr && explicit_path[0] != '\0') {
    if (attempt(explicit_path, 0)) return true;
    if (error.empty()) {
      const char* why = dlerror();
      error = std::string("GPULEDGER_CUPTI_PATH=") + explicit_path + ": " +
              (why != nullptr ? why : "cannot be loaded");
    }
    return false;
  }
  for (const char* name : kCuptiNames)
    if (attempt(name, RTLD_NOLOAD)) return true;
  const std::string own = OwnDirectory();
  if (!own.empty() && attempt(own + "libcupti.so", 0)) return true;
  for (const char* name : kCuptiNames)
    if (attempt(name, 0)) return true;
  if (error.empty())
    error = "no libcupti: none loaded in the process, none beside the tracer (" + own +
            "libcupti.so), none on the library path";
  return false;
}

CudaDriverApi FindCudaDriver() {
  CudaDriverApi cuda;
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (handle == nullptr) return cuda;
  Resolve(handle, "cuDeviceGet", cuda.device_get);
  Resolve(handle, "cuDeviceGetUuid_v2", cuda.uuid_v2);
  Resolve(handle, "cuDeviceGetUuid", cuda.uuid_v1);
  return cuda;
}

std::string FormatUuid(const CUuuid& uuid, bool mig) {
  std::string out = mig ? "MIG-" : "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(uuid.bytes[i]));
    out += hex;
  }
  return out;
}

std::string DeviceUuid(const CudaDriverApi& cuda, std::uint32_t ordinal) {
  CUdevice device = 0;
  if (cuda.device_get == nullptr || cuda.device_get(&device, static_cast<int>(ordinal)) != 0)
    return "";
  CUuuid own{};
  const cuDeviceGetUuid_fn get = cuda.uuid_v2 != nullptr ? cuda.uuid_v2 : cuda.uuid_v1;
  if (get == nullptr || get(&own, device) != 0) return "";
  CUuuid first{};
  const bool mig = cuda.uuid_v2 != nullptr && cuda.uuid_v1 != nullptr &&
                   cuda.uuid_v1(&first, device) == 0 &&
                   std::memcmp(first.bytes, own.bytes, sizeof own.bytes) != 0;
  return FormatUuid(own, mig);
}

}  // namespace gpuledger::kerneltime
