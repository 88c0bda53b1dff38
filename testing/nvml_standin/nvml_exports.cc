// The NVML C entry points of the stand-in libnvidia-ml.so.1 (README.md): NVML's names,
// signatures and return-code protocol, answered from the simulated node in standin.h. Every
// call takes one process-wide mutex (NVML's API is process-global, so this state is too);
// injected hangs sleep before taking it, so other calls are not blocked by a hung one.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "io/file_util.h"
#include "sources/nvml/nvml.h"
#include "testing/nvml_standin/standin.h"

// The opaque handle NVML hands out: one fixed slot per device, never freed, so a handle kept
// across nvmlShutdown is still safe to pass (it then answers UNINITIALIZED).
struct nvmlDevice_st {
  int index;
};

// A GPM sample buffer: the unit it last read (a device index; -1: never filled), when, and its
// counters then. Allocated by nvmlGpmSampleAlloc, deleted by nvmlGpmSampleFree.
struct nvmlGpmSample_st {
  int device = -1;
  gpuledger::Micros ts_us = 0;
  gpuledger::nvml_standin::GpmCounters counters;
};

namespace gpuledger::nvml_standin {
namespace {

constexpr int kMaxHandles = 64 * 8;
constexpr Micros kFaultsRereadUs = 200'000;

nvmlDevice_st* Handles() {
  static nvmlDevice_st* handles = [] {
    auto* h = new nvmlDevice_st[kMaxHandles];  // leaked on purpose: handles outlive shutdown
    for (int i = 0; i < kMaxHandles; ++i) h[i].index = i;
    return h;
  }();
  return handles;
}

nvmlDevice_t HandleOf(int index) { return &Handles()[index]; }

Micros NowWallUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
Micros NowSteadyUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Global {
  std::mutex mu;
  int init_count = 0;
  std::optional<Node> node;
  Faults faults;
  Micros faults_read_us = -1;
  std::string last_warning;
  std::set<nvmlGpmSample_t> gpm_samples;  // allocated, not yet freed
};

Global& G() {
  static Global* g = new Global;  // never destroyed: calls may race process exit
  return *g;
}

void WarnOnce(Global& g, const std::string& message) {
  if (message == g.last_warning) return;
  g.last_warning = message;
  std::fprintf(stderr, "libnvidia-ml stand-in: %s\n", message.c_str());
}

// Re-reads the fault file at most every 200 ms. Missing: no faults. Malformed: the previous
// faults stay and the error is printed once.
void RefreshFaults(Global& g) {
  if (!g.node || g.node->config().faults_path.empty()) {
    g.faults = Faults{};
    return;
  }
  Micros now = NowSteadyUs();
  if (g.faults_read_us >= 0 && now - g.faults_read_us < kFaultsRereadUs) return;
  g.faults_read_us = now;
  auto text = ReadFile(g.node->config().faults_path);
  if (!text.ok()) {
    g.faults = Faults{};
    return;
  }
  auto faults = ParseFaults(*text);
  if (!faults.ok()) {
    WarnOnce(g, g.node->config().faults_path + ": " + faults.error().message);
    return;
  }
  g.faults = std::move(*faults);
}

void Sleep(double seconds) {
  if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

// Every entry point but init, shutdown and nvmlErrorString: injected hang, then under the lock
// the init check, injected errors, advancing the node to now, and the body.
template <typename F>
nvmlReturn_t Call(const char* fn, F&& body) {
  Global& g = G();
  double hang = 0;
  {
    std::lock_guard lock(g.mu);
    if (g.init_count == 0) return NVML_ERROR_UNINITIALIZED;
    RefreshFaults(g);
    hang = g.faults.HangFor(fn);
  }
  Sleep(hang);
  std::lock_guard lock(g.mu);
  if (g.init_count == 0 || !g.node) return NVML_ERROR_UNINITIALIZED;
  if (auto code = g.faults.ErrorFor(fn)) return static_cast<nvmlReturn_t>(*code);
  if (g.faults.unsupported.contains(fn)) return NVML_ERROR_NOT_SUPPORTED;
  g.node->AdvanceTo(NowWallUs());
  return body(*g.node, g.faults);
}

// A call on one device handle: INVALID_ARGUMENT for a handle this library did not give out,
// GPU_IS_LOST for a lost GPU and its MIG devices.
template <typename F>
nvmlReturn_t DeviceCall(const char* fn, nvmlDevice_t handle, F&& body) {
  return Call(fn, [&](Node& node, const Faults& faults) -> nvmlReturn_t {
    nvmlDevice_st* base = Handles();
    if (handle < base || handle >= base + kMaxHandles) return NVML_ERROR_INVALID_ARGUMENT;
    auto index = static_cast<std::size_t>(handle - base);
    if (index >= node.devices().size()) return NVML_ERROR_INVALID_ARGUMENT;
    Device& d = node.devices()[index];
    if (faults.lost.contains(static_cast<unsigned>(d.gpu))) return NVML_ERROR_GPU_IS_LOST;
    return body(node, d);
  });
}

nvmlReturn_t CopyString(const std::string& s, char* buf, unsigned length) {
  if (buf == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (length < s.size() + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(buf, s.c_str(), s.size() + 1);
  return NVML_SUCCESS;
}

// The *infoCount protocol of nvmlDeviceGet*RunningProcesses: too small (0 included) answers
// INSUFFICIENT_SIZE with the count needed; nothing to list answers SUCCESS with 0.
nvmlReturn_t CopyProcesses(const std::vector<ProcMem>& ps, unsigned* count,
                           nvmlProcessInfo_t* infos) {
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto need = static_cast<unsigned>(ps.size());
  if (*count < need) {
    *count = need;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (need > 0 && infos == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned i = 0; i < need; ++i) {
    infos[i] = nvmlProcessInfo_t{};
    infos[i].pid = ps[i].pid;
    infos[i].usedGpuMemory = static_cast<unsigned long long>(ps[i].used_bytes);
    infos[i].gpuInstanceId = ps[i].gpu_instance_id;
    infos[i].computeInstanceId = ps[i].gpu_instance_id == 0xFFFFFFFFu ? 0xFFFFFFFFu : 0;
    infos[i].usedGpuCcProtectedMemory = 0;
  }
  *count = need;
  return NVML_SUCCESS;
}

std::vector<ProcSample> ProcSamplesAfter(const Device& d, unsigned long long last_seen) {
  std::vector<ProcSample> out;
  for (const ProcSample& s : d.proc)
    if (static_cast<unsigned long long>(s.ts_us) > last_seen) out.push_back(s);
  return out;
}

// Fills a GPM sample of device `index` with its counters now.
nvmlReturn_t TakeGpmSample(Node& node, int index, nvmlGpmSample_t sample) {
  const Micros now = NowWallUs();
  sample->device = index;
  sample->ts_us = now;
  sample->counters = node.GpmCountersAt(node.devices()[static_cast<std::size_t>(index)], now);
  return NVML_SUCCESS;
}

int IndexOf(Node& node, const Device& d) { return static_cast<int>(&d - node.devices().data()); }

// Per-process utilization exists on whole GPUs not in MIG mode (on MPS, for the server only).
bool ProcessUtilizationSupported(Node& node, const Device& d) {
  return d.mig < 0 && !node.mig_mode();
}

}  // namespace
}  // namespace gpuledger::nvml_standin

using namespace gpuledger::nvml_standin;  // NOLINT: the exports below are C, outside namespaces
using gpuledger::Micros;

#define NVML_EXPORT extern "C" __attribute__((visibility("default")))

// The exports keep NVML's own parameter names (nvml.h): naming checks stop here.
// NOLINTBEGIN(readability-identifier-naming)

NVML_EXPORT nvmlReturn_t nvmlInit_v2(void) {
  Global& g = G();
  double hang = 0;
  {
    std::lock_guard lock(g.mu);
    if (g.init_count > 0) {
      ++g.init_count;
    } else {
      const char* path = std::getenv("GPULEDGER_NVML_SCENARIO");
      if (path == nullptr || *path == '\0') {
        WarnOnce(g, "GPULEDGER_NVML_SCENARIO is not set: no driver");
        return NVML_ERROR_DRIVER_NOT_LOADED;
      }
      auto text = gpuledger::ReadFile(path);
      if (!text.ok()) {
        WarnOnce(g, text.error().message);
        return NVML_ERROR_DRIVER_NOT_LOADED;
      }
      std::string dir = std::string(path).find('/') == std::string::npos
                            ? std::string(".")
                            : std::string(path).substr(0, std::string(path).rfind('/'));
      auto config = ParseConfig(*text, dir);
      if (!config.ok()) {
        WarnOnce(g, std::string(path) + ": " + config.error().message);
        return NVML_ERROR_DRIVER_NOT_LOADED;
      }
      auto node = Node::Open(*config, NowWallUs());
      if (!node.ok()) {
        WarnOnce(g, std::string(path) + ": " + node.error().message);
        return NVML_ERROR_DRIVER_NOT_LOADED;
      }
      if (static_cast<int>(node->devices().size()) > kMaxHandles) {
        WarnOnce(g, std::string(path) + ": too many devices for the stand-in");
        return NVML_ERROR_DRIVER_NOT_LOADED;
      }
      g.node = std::move(*node);
      g.init_count = 1;
      g.faults_read_us = -1;
      g.last_warning.clear();
    }
    RefreshFaults(g);
    hang = g.faults.HangFor("nvmlInit_v2");
  }
  Sleep(hang);
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlShutdown(void) {
  Global& g = G();
  std::lock_guard lock(g.mu);
  if (g.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (--g.init_count == 0) {
    g.node.reset();
    if (!g.gpm_samples.empty())
      WarnOnce(g, std::to_string(g.gpm_samples.size()) +
                      " GPM sample buffer(s) still allocated at the last nvmlShutdown");
  }
  return NVML_SUCCESS;
}

NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED:
      return "Already Initialized";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER:
      return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_IRQ_ISSUE:
      return "Interrupt request issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM:
      return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED:
      return "GPU requires restart";
    case NVML_ERROR_OPERATING_SYSTEM:
      return "The operating system has blocked the request.";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "RM has detected an NVML/RM version mismatch.";
    case NVML_ERROR_IN_USE:
      return "In use by another client";
    case NVML_ERROR_MEMORY:
      return "Insufficient Memory";
    case NVML_ERROR_NO_DATA:
      return "No data";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "Argument version mismatch";
    case NVML_ERROR_NOT_READY:
      return "System is not ready";
    case NVML_ERROR_GPU_NOT_FOUND:
      return "No GPUs were found";
    case NVML_ERROR_INVALID_STATE:
      return "Invalid state";
    default:
      return "Unknown Error";
  }
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  return Call("nvmlSystemGetDriverVersion",
              [&](Node&, const Faults&) { return CopyString("550.54.15", version, length); });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) {
  return Call("nvmlDeviceGetCount_v2", [&](Node& node, const Faults& f) {
    if (deviceCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *deviceCount = f.count.value_or(static_cast<unsigned>(node.gpu_count()));
    return NVML_SUCCESS;
  });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  return Call("nvmlDeviceGetHandleByIndex_v2", [&](Node& node, const Faults& f) {
    auto real = static_cast<unsigned>(node.gpu_count());
    if (device == nullptr || index >= f.count.value_or(real)) return NVML_ERROR_INVALID_ARGUMENT;
    // Counted but unreachable (a `count` above the real one), or lost.
    if (index >= real || f.lost.contains(index)) return NVML_ERROR_GPU_IS_LOST;
    *device = HandleOf(static_cast<int>(index));
    return NVML_SUCCESS;
  });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  return DeviceCall("nvmlDeviceGetUUID", device,
                    [&](Node&, Device& d) { return CopyString(d.uuid.str(), uuid, length); });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  return DeviceCall("nvmlDeviceGetName", device,
                    [&](Node&, Device& d) { return CopyString(d.name, name, length); });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  return DeviceCall("nvmlDeviceGetMemoryInfo", device, [&](Node&, Device& d) {
    if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    auto total = static_cast<unsigned long long>(d.total_bytes);
    auto used = std::min(total, static_cast<unsigned long long>(d.used_bytes));
    *memory = nvmlMemory_t{total, total - used, used};
    return NVML_SUCCESS;
  });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                       nvmlUtilization_t* utilization) {
  return DeviceCall("nvmlDeviceGetUtilizationRates", device, [&](Node& node, Device& d) {
    if (utilization == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (d.mig >= 0 || node.mig_mode()) return NVML_ERROR_NOT_SUPPORTED;
    utilization->gpu = d.util.empty() ? 0 : d.util.back().value;
    utilization->memory = 0;  // the simulator models no memory-bandwidth activity
    return NVML_SUCCESS;
  });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetSamples(nvmlDevice_t device, nvmlSamplingType_t type,
                                              unsigned long long lastSeenTimeStamp,
                                              nvmlValueType_t* sampleValType,
                                              unsigned int* sampleCount, nvmlSample_t* samples) {
  return DeviceCall("nvmlDeviceGetSamples", device, [&](Node& node, Device& d) {
    if (sampleValType == nullptr || sampleCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const std::deque<UtilSample>* q = nullptr;
    if (type == NVML_GPU_UTILIZATION_SAMPLES && d.mig < 0 && !node.mig_mode()) q = &d.util;
    if (type == NVML_TOTAL_POWER_SAMPLES && d.mig < 0) q = &d.power;
    if (q == nullptr) return NVML_ERROR_NOT_SUPPORTED;
    *sampleValType = NVML_VALUE_TYPE_UNSIGNED_INT;
    std::vector<UtilSample> newer;
    for (const UtilSample& s : *q)
      if (static_cast<unsigned long long>(s.ts_us) > lastSeenTimeStamp) newer.push_back(s);
    if (newer.empty()) return NVML_ERROR_NOT_FOUND;
    auto need = static_cast<unsigned>(newer.size());
    if (samples == nullptr) {  // NVML's size query answers SUCCESS
      *sampleCount = need;
      return NVML_SUCCESS;
    }
    if (*sampleCount < need) {
      *sampleCount = need;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned i = 0; i < need; ++i) {
      samples[i] = nvmlSample_t{};
      samples[i].timeStamp = static_cast<unsigned long long>(newer[i].ts_us);
      samples[i].sampleValue.uiVal = newer[i].value;
    }
    *sampleCount = need;
    return NVML_SUCCESS;
  });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(
    nvmlDevice_t device, nvmlProcessUtilizationSample_t* utilization,
    unsigned int* processSamplesCount, unsigned long long lastSeenTimeStamp) {
  return DeviceCall("nvmlDeviceGetProcessUtilization", device, [&](Node& node, Device& d) {
    if (processSamplesCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!ProcessUtilizationSupported(node, d)) return NVML_ERROR_NOT_SUPPORTED;
    auto newer = ProcSamplesAfter(d, lastSeenTimeStamp);
    if (newer.empty()) {
      *processSamplesCount = 0;
      return NVML_ERROR_NOT_FOUND;
    }
    auto need = static_cast<unsigned>(newer.size());
    // NULL sizes the buffer with INSUFFICIENT_SIZE (what real drivers do; go-nvml and
    // nvml-wrapper rely on it), as does a buffer too small.
    if (utilization == nullptr || *processSamplesCount < need) {
      *processSamplesCount = need;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned i = 0; i < need; ++i) {
      utilization[i] = nvmlProcessUtilizationSample_t{};
      utilization[i].pid = newer[i].pid;
      utilization[i].timeStamp = static_cast<unsigned long long>(newer[i].ts_us);
      utilization[i].smUtil = newer[i].sm_util;
    }
    *processSamplesCount = need;
    return NVML_SUCCESS;
  });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetProcessesUtilizationInfo(
    nvmlDevice_t device, nvmlProcessesUtilizationInfo_t* procesesUtilInfo) {
  return DeviceCall("nvmlDeviceGetProcessesUtilizationInfo", device, [&](Node& node, Device& d) {
    nvmlProcessesUtilizationInfo_t* info = procesesUtilInfo;
    if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (info->version != nvmlProcessesUtilizationInfo_v1)
      return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (!ProcessUtilizationSupported(node, d)) return NVML_ERROR_NOT_SUPPORTED;
    auto newer = ProcSamplesAfter(d, info->lastSeenTimeStamp);
    if (newer.empty()) {
      info->processSamplesCount = 0;
      return NVML_ERROR_NOT_FOUND;
    }
    auto need = static_cast<unsigned>(newer.size());
    if (info->procUtilArray == nullptr || info->processSamplesCount < need) {
      info->processSamplesCount = need;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned i = 0; i < need; ++i) {
      info->procUtilArray[i] = nvmlProcessUtilizationInfo_v1_t{};
      info->procUtilArray[i].timeStamp = static_cast<unsigned long long>(newer[i].ts_us);
      info->procUtilArray[i].pid = newer[i].pid;
      info->procUtilArray[i].smUtil = newer[i].sm_util;
    }
    info->processSamplesCount = need;
    return NVML_SUCCESS;
  });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                 unsigned int* infoCount,
                                                                 nvmlProcessInfo_t* infos) {
  // On MPS a real driver lists the clients here too, and the server (an H200, run1-mps).
  return DeviceCall("nvmlDeviceGetComputeRunningProcesses_v3", device,
                    [&](Node&, Device& d) { return CopyProcesses(d.processes, infoCount, infos); });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                    unsigned int* infoCount,
                                                                    nvmlProcessInfo_t* infos) {
  return DeviceCall("nvmlDeviceGetMPSComputeRunningProcesses_v3", device,
                    [&](Node& node, Device& d) {
                      static const std::vector<ProcMem> kNone;
                      return CopyProcesses(node.mps() ? d.mps_clients : kNone, infoCount, infos);
                    });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device,
                                                             unsigned long long* energy) {
  return DeviceCall("nvmlDeviceGetTotalEnergyConsumption", device, [&](Node&, Device& d) {
    if (energy == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (d.mig >= 0) return NVML_ERROR_NOT_SUPPORTED;
    *energy = static_cast<unsigned long long>(d.energy_mj);
    return NVML_SUCCESS;
  });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  return DeviceCall("nvmlDeviceGetPowerUsage", device, [&](Node&, Device& d) {
    if (power == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (d.mig >= 0) return NVML_ERROR_NOT_SUPPORTED;
    *power = static_cast<unsigned>(d.power_mw);
    return NVML_SUCCESS;
  });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* currentMode,
                                              unsigned int* pendingMode) {
  return DeviceCall("nvmlDeviceGetMigMode", device, [&](Node& node, Device& d) {
    if (currentMode == nullptr || pendingMode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (d.mig >= 0 || !MigCapable(node.spec().gpu_model)) return NVML_ERROR_NOT_SUPPORTED;
    *currentMode = *pendingMode =
        node.mig_mode() ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
  });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  return DeviceCall("nvmlDeviceGetMaxMigDeviceCount", device, [&](Node& node, Device& d) {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (d.mig >= 0 || !MigCapable(node.spec().gpu_model)) return NVML_ERROR_NOT_SUPPORTED;
    *count = static_cast<unsigned>(node.spec().total_slices);
    return NVML_SUCCESS;
  });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device,
                                                             unsigned int index,
                                                             nvmlDevice_t* migDevice) {
  return DeviceCall("nvmlDeviceGetMigDeviceHandleByIndex", device, [&](Node& node, Device& d) {
    if (migDevice == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (d.mig >= 0 || !MigCapable(node.spec().gpu_model) || !node.mig_mode())
      return NVML_ERROR_NOT_SUPPORTED;
    if (index >= static_cast<unsigned>(node.spec().total_slices))
      return NVML_ERROR_INVALID_ARGUMENT;
    if (index >= static_cast<unsigned>(node.mig_layout())) return NVML_ERROR_NOT_FOUND;
    *migDevice = HandleOf(node.gpu_count() + d.gpu * node.mig_layout() + static_cast<int>(index));
    return NVML_SUCCESS;
  });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  return DeviceCall("nvmlDeviceGetGpuInstanceId", device, [&](Node&, Device& d) {
    if (id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (d.mig < 0) return NVML_ERROR_NOT_SUPPORTED;
    *id = d.gpu_instance_id;
    return NVML_SUCCESS;
  });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice,
                                                                      nvmlDevice_t* device) {
  return DeviceCall("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", migDevice,
                    [&](Node&, Device& d) {
                      if (device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
                      if (d.mig < 0) return NVML_ERROR_NOT_SUPPORTED;
                      *device = HandleOf(d.gpu);
                      return NVML_SUCCESS;
                    });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device,
                                                    nvmlDeviceAttributes_t* attributes) {
  return DeviceCall("nvmlDeviceGetAttributes_v2", device, [&](Node& node, Device& d) {
    if (attributes == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const auto& spec = node.spec();
    unsigned sms = SmCount(spec.gpu_model);
    unsigned total = static_cast<unsigned>(spec.total_slices);
    *attributes = nvmlDeviceAttributes_t{};
    attributes->memorySizeMB = static_cast<unsigned long long>(d.total_bytes) / (1024 * 1024);
    if (d.mig >= 0) {
      attributes->multiprocessorCount = sms * static_cast<unsigned>(d.slices) / total;
      attributes->gpuInstanceSliceCount = static_cast<unsigned>(d.slices);
      attributes->computeInstanceSliceCount = static_cast<unsigned>(d.slices);
      attributes->sharedCopyEngineCount = static_cast<unsigned>(d.slices);
    } else {
      attributes->multiprocessorCount = sms;
      unsigned slices = MigCapable(spec.gpu_model) ? total : 0;
      attributes->gpuInstanceSliceCount = slices;
      attributes->computeInstanceSliceCount = slices;
      attributes->sharedCopyEngineCount = 7;
    }
    return NVML_SUCCESS;
  });
}

// ---- GPM ------------------------------------------------------------------------------------

NVML_EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device,
                                                   nvmlGpmSupport_t* gpmSupport) {
  return DeviceCall("nvmlGpmQueryDeviceSupport", device, [&](Node& node, Device&) {
    if (gpmSupport == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (gpmSupport->version != NVML_GPM_SUPPORT_VERSION)
      return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    // Pre-Hopper GPUs answer SUCCESS with 0, as real drivers do (DCGM reads it so).
    gpmSupport->isSupportedDevice = node.gpm_capable() ? 1 : 0;
    return NVML_SUCCESS;
  });
}

NVML_EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* gpmSample) {
  return Call("nvmlGpmSampleAlloc", [&](Node&, const Faults&) {
    if (gpmSample == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *gpmSample = new nvmlGpmSample_st;
    G().gpm_samples.insert(*gpmSample);
    return NVML_SUCCESS;
  });
}

NVML_EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample) {
  return Call("nvmlGpmSampleFree", [&](Node&, const Faults&) {
    if (G().gpm_samples.erase(gpmSample) == 0) return NVML_ERROR_INVALID_ARGUMENT;
    delete gpmSample;
    return NVML_SUCCESS;
  });
}

NVML_EXPORT nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample) {
  return DeviceCall("nvmlGpmSampleGet", device, [&](Node& node, Device& d) {
    if (!G().gpm_samples.contains(gpmSample)) return NVML_ERROR_INVALID_ARGUMENT;
    if (!node.gpm_capable()) return NVML_ERROR_NOT_SUPPORTED;
    if (d.mig >= 0) return NVML_ERROR_INVALID_ARGUMENT;  // instances: nvmlGpmMigSampleGet
    return TakeGpmSample(node, IndexOf(node, d), gpmSample);
  });
}

NVML_EXPORT nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpuInstanceId,
                                             nvmlGpmSample_t gpmSample) {
  return DeviceCall("nvmlGpmMigSampleGet", device, [&](Node& node, Device& d) {
    if (!G().gpm_samples.contains(gpmSample)) return NVML_ERROR_INVALID_ARGUMENT;
    if (!node.gpm_capable()) return NVML_ERROR_NOT_SUPPORTED;
    if (d.mig >= 0) return NVML_ERROR_INVALID_ARGUMENT;  // the parent GPU's handle
    for (Device& m : node.devices())
      if (m.mig >= 0 && m.gpu == d.gpu && m.gpu_instance_id == gpuInstanceId)
        return TakeGpmSample(node, IndexOf(node, m), gpmSample);
    return NVML_ERROR_NOT_FOUND;  // no such GPU instance (none without MIG mode)
  });
}

NVML_EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* metricsGet) {
  return Call("nvmlGpmMetricsGet", [&](Node&, const Faults&) {
    nvmlGpmMetricsGet_t* m = metricsGet;
    if (m == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (m->version != NVML_GPM_METRICS_GET_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    const auto& live = G().gpm_samples;
    if (m->numMetrics > NVML_GPM_METRIC_MAX || !live.contains(m->sample1) ||
        !live.contains(m->sample2))
      return NVML_ERROR_INVALID_ARGUMENT;
    const nvmlGpmSample_st& a = *m->sample1;
    const nvmlGpmSample_st& b = *m->sample2;
    // Both filled, from one unit, the second later.
    if (a.device < 0 || a.device != b.device || b.ts_us <= a.ts_us)
      return NVML_ERROR_INVALID_ARGUMENT;
    const double dt = static_cast<double>(b.ts_us - a.ts_us);
    auto percent = [&](double GpmCounters::*field) {
      const double p = 100.0 * (b.counters.*field - a.counters.*field) / dt;
      return std::clamp(std::round(p * 100) / 100, 0.0, 100.0);  // 2 decimals, as GPM reports
    };
    struct Known {
      unsigned id;
      double GpmCounters::*field;
      const char* short_name;
      const char* long_name;
    };
    static const Known kKnown[] = {
        {NVML_GPM_METRIC_GRAPHICS_UTIL, &GpmCounters::graphics_us, "GRACT", "graphics activity"},
        {NVML_GPM_METRIC_SM_UTIL, &GpmCounters::sm_active_us, "SMACT", "SM activity"},
        {NVML_GPM_METRIC_SM_OCCUPANCY, &GpmCounters::sm_occupancy_us, "SMOCC", "SM occupancy"},
        {NVML_GPM_METRIC_ANY_TENSOR_UTIL, &GpmCounters::tensor_active_us, "TENSO",
         "tensor activity"},
        {NVML_GPM_METRIC_DRAM_BW_UTIL, &GpmCounters::dram_active_us, "DRAMA", "DRAM activity"},
    };
    static char percent_unit[] = "%";
    for (unsigned i = 0; i < m->numMetrics; ++i) {
      nvmlGpmMetric_t& out = m->metrics[i];
      out.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;  // the stand-in models only the five above
      out.value = 0;
      out.metricInfo = {nullptr, nullptr, nullptr};
      for (const Known& k : kKnown) {
        if (k.id != out.metricId) continue;
        out.nvmlReturn = NVML_SUCCESS;
        out.value = percent(k.field);
        out.metricInfo = {const_cast<char*>(k.short_name), const_cast<char*>(k.long_name),
                          percent_unit};
      }
    }
    return NVML_SUCCESS;
  });
}

// NOLINTEND(readability-identifier-naming)

// The definitions must have exactly the header's signatures (the agent casts dlsym to these).
// NOLINTNEXTLINE(bugprone-macro-parentheses): `fn` is a name pasted into a type, not a value
#define GPULEDGER_CHECK_SIGNATURE(fn) static_assert(std::is_same_v<decltype(&fn), fn##_fn>, #fn)
GPULEDGER_CHECK_SIGNATURE(nvmlInit_v2);
GPULEDGER_CHECK_SIGNATURE(nvmlShutdown);
GPULEDGER_CHECK_SIGNATURE(nvmlErrorString);
GPULEDGER_CHECK_SIGNATURE(nvmlSystemGetDriverVersion);
GPULEDGER_CHECK_SIGNATURE(nvmlDeviceGetCount_v2);
GPULEDGER_CHECK_SIGNATURE(nvmlDeviceGetHandleByIndex_v2);
GPULEDGER_CHECK_SIGNATURE(nvmlDeviceGetUUID);
GPULEDGER_CHECK_SIGNATURE(nvmlDeviceGetName);
GPULEDGER_CHECK_SIGNATURE(nvmlDeviceGetMemoryInfo);
GPULEDGER_CHECK_SIGNATURE(nvmlDeviceGetUtilizationRates);
GPULEDGER_CHECK_SIGNATURE(nvmlDeviceGetSamples);
GPULEDGER_CHECK_SIGNATURE(nvmlDeviceGetProcessUtilization);
GPULEDGER_CHECK_SIGNATURE(nvmlDeviceGetProcessesUtilizationInfo);
GPULEDGER_CHECK_SIGNATURE(nvmlDeviceGetComputeRunningProcesses_v3);
GPULEDGER_CHECK_SIGNATURE(nvmlDeviceGetMPSComputeRunningProcesses_v3);
GPULEDGER_CHECK_SIGNATURE(nvmlDeviceGetTotalEnergyConsumption);
GPULEDGER_CHECK_SIGNATURE(nvmlDeviceGetPowerUsage);
GPULEDGER_CHECK_SIGNATURE(nvmlDeviceGetMigMode);
GPULEDGER_CHECK_SIGNATURE(nvmlDeviceGetMaxMigDeviceCount);
GPULEDGER_CHECK_SIGNATURE(nvmlDeviceGetMigDeviceHandleByIndex);
GPULEDGER_CHECK_SIGNATURE(nvmlDeviceGetGpuInstanceId);
GPULEDGER_CHECK_SIGNATURE(nvmlDeviceGetDeviceHandleFromMigDeviceHandle);
GPULEDGER_CHECK_SIGNATURE(nvmlDeviceGetAttributes_v2);
GPULEDGER_CHECK_SIGNATURE(nvmlGpmQueryDeviceSupport);
GPULEDGER_CHECK_SIGNATURE(nvmlGpmSampleAlloc);
GPULEDGER_CHECK_SIGNATURE(nvmlGpmSampleFree);
GPULEDGER_CHECK_SIGNATURE(nvmlGpmSampleGet);
GPULEDGER_CHECK_SIGNATURE(nvmlGpmMigSampleGet);
GPULEDGER_CHECK_SIGNATURE(nvmlGpmMetricsGet);
