// The cost of each NVML call the agent makes, median and p99, on whatever libnvidia-ml.so.1 is
// loaded (a real driver on a GPU machine; the stand-in elsewhere). Calls go straight through
// the function table — the driver's cost, without our watchdog's thread hop, which is
// measured separately as "watchdog round trip".
//
// Usage: nvml_latency [LIBRARY] [ITERATIONS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sources/nvml/nvml_api.h"
#include "sources/nvml/watchdog.h"

using gpuledger::nvml::NvmlApi;

namespace {

void Measure(const std::string& name, int iterations, const std::function<nvmlReturn_t()>& call) {
  std::vector<double> us;
  us.reserve(static_cast<std::size_t>(iterations));
  nvmlReturn_t last = NVML_SUCCESS;
  for (int i = 0; i < iterations; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    last = call();
    us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  fmt::print("{:<44} median {:>9.2f} us   p99 {:>9.2f} us   ({})\n", name, us[us.size() / 2],
             us[us.size() * 99 / 100], gpuledger::nvml::ErrorName(last));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string library = argc > 1 ? argv[1] : "libnvidia-ml.so.1";
  const int n = argc > 2 ? std::atoi(argv[2]) : 200;
  auto api = gpuledger::nvml::LoadNvml(library);
  if (!api.ok()) {
    fmt::print(stderr, "{}\n", api.error().message);
    return 1;
  }
  if (api->init() != NVML_SUCCESS) {
    fmt::print(stderr, "nvmlInit_v2 failed\n");
    return 1;
  }
  unsigned count = 0;
  api->device_count(&count);
  fmt::print("{}: {} devices, {} iterations per call\n", library, count, n);
  Measure("nvmlDeviceGetCount_v2", n, [&] { return api->device_count(&count); });
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t d;
    if (api->handle_by_index(i, &d) != NVML_SUCCESS) continue;
    char name[96];
    api->name(d, name, sizeof name);
    fmt::print("-- device {} ({})\n", i, name);
    char uuid[96];
    Measure("nvmlDeviceGetUUID", n, [&] { return api->uuid(d, uuid, sizeof uuid); });
    nvmlMemory_t mem;
    Measure("nvmlDeviceGetMemoryInfo", n, [&] { return api->memory_info(d, &mem); });
    if (api->utilization_rates) {
      nvmlUtilization_t u;
      Measure("nvmlDeviceGetUtilizationRates", n, [&] { return api->utilization_rates(d, &u); });
    }
    if (api->total_energy) {
      unsigned long long mj;
      Measure("nvmlDeviceGetTotalEnergyConsumption", n, [&] { return api->total_energy(d, &mj); });
    }
    if (api->power_usage) {
      unsigned mw;
      Measure("nvmlDeviceGetPowerUsage", n, [&] { return api->power_usage(d, &mw); });
    }
    if (api->mig_mode) {
      unsigned cur, pend;
      Measure("nvmlDeviceGetMigMode", n, [&] { return api->mig_mode(d, &cur, &pend); });
    }
    if (api->compute_processes) {
      std::vector<nvmlProcessInfo_t> procs(64);
      Measure("nvmlDeviceGetComputeRunningProcesses_v3", n, [&] {
        unsigned c = static_cast<unsigned>(procs.size());
        return api->compute_processes(d, &c, procs.data());
      });
    }
    if (api->process_utilization) {
      std::vector<nvmlProcessUtilizationSample_t> samples(128);
      Measure("nvmlDeviceGetProcessUtilization", n, [&] {
        unsigned c = static_cast<unsigned>(samples.size());
        return api->process_utilization(d, samples.data(), &c, 0);
      });
    }
    if (api->samples) {
      std::vector<nvmlSample_t> s(256);
      Measure("nvmlDeviceGetSamples(GPU_UTILIZATION)", n, [&] {
        unsigned c = static_cast<unsigned>(s.size());
        nvmlValueType_t type;
        return api->samples(d, NVML_GPU_UTILIZATION_SAMPLES, 0, &type, &c, s.data());
      });
    }
  }
  gpuledger::nvml::Watchdog watchdog(2'000'000, nullptr);
  Measure("watchdog round trip (no-op call)", n, [&] {
    (void)watchdog.Run("noop", [] {});
    return NVML_SUCCESS;
  });
  api->shutdown();
  return 0;
}
