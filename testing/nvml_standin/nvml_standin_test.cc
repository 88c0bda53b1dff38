// The stand-in libnvidia-ml.so.1 through its C ABI, loaded with dlopen by absolute path as the
// agent loads the real one. Scenarios start 30 s before "now", so there is history.
#include <dlfcn.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/time_util.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "sources/nvml/nvml.h"
#include "test_paths.h"

namespace gpuledger {
namespace {

namespace fs = std::filesystem;

constexpr char kScenario[] = R"(name: standin
start: "2026-11-23T00:00:00Z"
duration: 2h
seed: 5
nodes:
  - {name: ts, gpu_model: A100-80GB, gpus: 2, sharing: time-slicing, replicas: 4}
  - {name: mig, gpu_model: H100-80GB, sharing: mig, mig_layout: [3g.40gb, 2g.20gb, 1g.10gb]}
  - {name: mps, gpu_model: L4, sharing: mps, replicas: 4}
  - {name: hx, gpu_model: H200-141GB, gpus: 2}
workloads:
  - {namespace: a, name: p20, node: ts, placement: {node: ts, gpus: [0]},
     compute: {profile: constant, duty: 0.2}, memory: {bytes: 1GiB}}
  - {namespace: a, name: p30, node: ts, placement: {node: ts, gpus: [0]},
     compute: {profile: constant, duty: 0.3}, processes: 2, memory: {bytes: 4GiB}}
  - {namespace: a, name: idle, node: ts, placement: {node: ts, gpus: [1]}, memory: {bytes: 2GiB}}
  - {namespace: b, name: m1, mig_profile: 3g.40gb, compute: {profile: constant, duty: 0.5},
     memory: {bytes: 10GiB}}
  - {namespace: c, name: c1, node: mps, compute: {profile: constant, duty: 0.4},
     memory: {bytes: 3GiB}}
  - {namespace: d, name: h1, node: hx, compute: {profile: constant, duty: 0.8},
     efficiency: {sm_active: 0.5, sm_occupancy: 0.4, tensor_active: 0.25, dram_active: 0.75}}
)";

Micros NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The NVML entry points, resolved once from the stand-in.
struct Nvml {
  void* so = nullptr;
#define NVML_FN(name) name##_fn name = nullptr;
  NVML_FN(nvmlInit_v2)
  NVML_FN(nvmlShutdown)
  NVML_FN(nvmlErrorString)
  NVML_FN(nvmlSystemGetDriverVersion)
  NVML_FN(nvmlDeviceGetCount_v2)
  NVML_FN(nvmlDeviceGetHandleByIndex_v2)
  NVML_FN(nvmlDeviceGetUUID)
  NVML_FN(nvmlDeviceGetName)
  NVML_FN(nvmlDeviceGetMemoryInfo)
  NVML_FN(nvmlDeviceGetUtilizationRates)
  NVML_FN(nvmlDeviceGetSamples)
  NVML_FN(nvmlDeviceGetProcessUtilization)
  NVML_FN(nvmlDeviceGetProcessesUtilizationInfo)
  NVML_FN(nvmlDeviceGetComputeRunningProcesses_v3)
  NVML_FN(nvmlDeviceGetMPSComputeRunningProcesses_v3)
  NVML_FN(nvmlDeviceGetTotalEnergyConsumption)
  NVML_FN(nvmlDeviceGetPowerUsage)
  NVML_FN(nvmlDeviceGetMigMode)
  NVML_FN(nvmlDeviceGetMaxMigDeviceCount)
  NVML_FN(nvmlDeviceGetMigDeviceHandleByIndex)
  NVML_FN(nvmlDeviceGetGpuInstanceId)
  NVML_FN(nvmlDeviceGetDeviceHandleFromMigDeviceHandle)
  NVML_FN(nvmlDeviceGetAttributes_v2)
  NVML_FN(nvmlGpmQueryDeviceSupport)
  NVML_FN(nvmlGpmSampleAlloc)
  NVML_FN(nvmlGpmSampleFree)
  NVML_FN(nvmlGpmSampleGet)
  NVML_FN(nvmlGpmMigSampleGet)
  NVML_FN(nvmlGpmMetricsGet)
#undef NVML_FN
};

const Nvml& Lib() {
  static Nvml* lib = [] {
    auto* n = new Nvml;
    n->so = dlopen(gpuledger::test_paths::kNvmlStandin, RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(n->so, nullptr) << dlerror();
    if (n->so == nullptr) return n;
#define NVML_FN(name)                                         \
  n->name = reinterpret_cast<name##_fn>(dlsym(n->so, #name)); \
  EXPECT_NE(n->name, nullptr) << #name;
    NVML_FN(nvmlInit_v2)
    NVML_FN(nvmlShutdown)
    NVML_FN(nvmlErrorString)
    NVML_FN(nvmlSystemGetDriverVersion)
    NVML_FN(nvmlDeviceGetCount_v2)
    NVML_FN(nvmlDeviceGetHandleByIndex_v2)
    NVML_FN(nvmlDeviceGetUUID)
    NVML_FN(nvmlDeviceGetName)
    NVML_FN(nvmlDeviceGetMemoryInfo)
    NVML_FN(nvmlDeviceGetUtilizationRates)
    NVML_FN(nvmlDeviceGetSamples)
    NVML_FN(nvmlDeviceGetProcessUtilization)
    NVML_FN(nvmlDeviceGetProcessesUtilizationInfo)
    NVML_FN(nvmlDeviceGetComputeRunningProcesses_v3)
    NVML_FN(nvmlDeviceGetMPSComputeRunningProcesses_v3)
    NVML_FN(nvmlDeviceGetTotalEnergyConsumption)
    NVML_FN(nvmlDeviceGetPowerUsage)
    NVML_FN(nvmlDeviceGetMigMode)
    NVML_FN(nvmlDeviceGetMaxMigDeviceCount)
    NVML_FN(nvmlDeviceGetMigDeviceHandleByIndex)
    NVML_FN(nvmlDeviceGetGpuInstanceId)
    NVML_FN(nvmlDeviceGetDeviceHandleFromMigDeviceHandle)
    NVML_FN(nvmlDeviceGetAttributes_v2)
    NVML_FN(nvmlGpmQueryDeviceSupport)
    NVML_FN(nvmlGpmSampleAlloc)
    NVML_FN(nvmlGpmSampleFree)
    NVML_FN(nvmlGpmSampleGet)
    NVML_FN(nvmlGpmMigSampleGet)
    NVML_FN(nvmlGpmMetricsGet)
#undef NVML_FN
    return n;
  }();
  return *lib;
}

std::string Uuid(nvmlDevice_t d) {
  char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  EXPECT_EQ(Lib().nvmlDeviceGetUUID(d, buf, sizeof buf), NVML_SUCCESS);
  return buf;
}
std::string Name(nvmlDevice_t d) {
  char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  EXPECT_EQ(Lib().nvmlDeviceGetName(d, buf, sizeof buf), NVML_SUCCESS);
  return buf;
}

// Per test: a temp dir with the scenario, a config for one node, and NVML initialised on it.
class StandinTest : public ::testing::Test {
 protected:
  void Open(const std::string& node, Micros history_us = 30 * kMicrosPerSecond) {
    ASSERT_NE(Lib().so, nullptr);
    dir_ = fs::temp_directory_path() /
           ("gpuledger-nvml-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "scenario.yaml") << kScenario;
    origin_us_ = NowUs() - history_us;
    std::ofstream(dir_ / "nvml.yaml")
        << "scenario: scenario.yaml\nnode: " << node << "\norigin_unix_us: " << origin_us_
        << "\nstep: 1s\nfaults: faults.txt\n";
    setenv("GPULEDGER_NVML_SCENARIO", (dir_ / "nvml.yaml").c_str(), 1);
    ASSERT_EQ(Lib().nvmlInit_v2(), NVML_SUCCESS);
    initialised_ = true;
    auto sc = sim::ParseScenario(kScenario, "scenario.yaml");
    ASSERT_TRUE(sc.ok()) << sc.error().message;
    scenario_ = *sc;
  }
  void TearDown() override {
    if (initialised_) {
      EXPECT_EQ(Lib().nvmlShutdown(), NVML_SUCCESS);
    }
    unsetenv("GPULEDGER_NVML_SCENARIO");
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  void WriteFaults(const std::string& text) {
    std::ofstream(dir_ / "faults.txt") << text;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));  // re-read every 200 ms
  }
  sim::NodeState StateNow(const std::string& node) {
    auto st = sim::StateAt(scenario_, node, scenario_.start_us + (NowUs() - origin_us_));
    EXPECT_TRUE(st.ok());
    return *st;
  }
  nvmlDevice_t Handle(unsigned i) {
    nvmlDevice_t d = nullptr;
    EXPECT_EQ(Lib().nvmlDeviceGetHandleByIndex_v2(i, &d), NVML_SUCCESS);
    return d;
  }

  fs::path dir_;
  Micros origin_us_ = 0;
  bool initialised_ = false;
  sim::Scenario scenario_;
};

TEST(StandinInit, NoConfigIsNoDriver) {
  ASSERT_NE(Lib().so, nullptr);
  unsigned n = 0;
  EXPECT_EQ(Lib().nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
  unsetenv("GPULEDGER_NVML_SCENARIO");
  EXPECT_EQ(Lib().nvmlInit_v2(), NVML_ERROR_DRIVER_NOT_LOADED);
  setenv("GPULEDGER_NVML_SCENARIO", "/nonexistent/nvml.yaml", 1);
  EXPECT_EQ(Lib().nvmlInit_v2(), NVML_ERROR_DRIVER_NOT_LOADED);
  fs::path bad = fs::temp_directory_path() / ("gpuledger-nvml-bad-" + std::to_string(::getpid()));
  std::ofstream(bad) << "scenario: /nonexistent.yaml\nnode: x\norigin_unix_us: 0\n";
  setenv("GPULEDGER_NVML_SCENARIO", bad.c_str(), 1);
  EXPECT_EQ(Lib().nvmlInit_v2(), NVML_ERROR_DRIVER_NOT_LOADED);
  fs::remove(bad);
  unsetenv("GPULEDGER_NVML_SCENARIO");
  EXPECT_EQ(Lib().nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
  EXPECT_STREQ(Lib().nvmlErrorString(NVML_ERROR_GPU_IS_LOST), "GPU is lost");
}

TEST_F(StandinTest, DevicesMemoryEnergy) {
  Open("ts");
  unsigned n = 0;
  ASSERT_EQ(Lib().nvmlDeviceGetCount_v2(&n), NVML_SUCCESS);
  ASSERT_EQ(n, 2u);
  char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
  EXPECT_EQ(Lib().nvmlSystemGetDriverVersion(version, sizeof version), NVML_SUCCESS);
  sim::NodeState st = StateNow("ts");
  for (unsigned i = 0; i < n; ++i) {
    nvmlDevice_t d = Handle(i);
    EXPECT_EQ(Uuid(d), st.gpus[i].uuid.str());
    EXPECT_EQ(Name(d), "NVIDIA A100-SXM4-80GB");
    nvmlMemory_t mem{};
    ASSERT_EQ(Lib().nvmlDeviceGetMemoryInfo(d, &mem), NVML_SUCCESS);
    EXPECT_EQ(mem.total, static_cast<unsigned long long>(80 * kGiB));
    EXPECT_EQ(mem.used + mem.free, mem.total);
    Bytes procs = i == 0 ? 5 * kGiB : 2 * kGiB;
    EXPECT_EQ(mem.used, static_cast<unsigned long long>(
                            procs + static_cast<Bytes>(0.004 * static_cast<double>(80 * kGiB))));
    unsigned mode = 9, pending = 9;
    EXPECT_EQ(Lib().nvmlDeviceGetMigMode(d, &mode, &pending), NVML_SUCCESS);
    EXPECT_EQ(mode, static_cast<unsigned>(NVML_DEVICE_MIG_DISABLE));
  }
  char small[8];
  EXPECT_EQ(Lib().nvmlDeviceGetUUID(Handle(0), small, sizeof small), NVML_ERROR_INSUFFICIENT_SIZE);
  nvmlDevice_t bad = nullptr;
  EXPECT_EQ(Lib().nvmlDeviceGetHandleByIndex_v2(2, &bad), NVML_ERROR_INVALID_ARGUMENT);

  // Processes with their memory, pids as the simulator's.
  unsigned count = 0;
  ASSERT_EQ(Lib().nvmlDeviceGetComputeRunningProcesses_v3(Handle(0), &count, nullptr),
            NVML_ERROR_INSUFFICIENT_SIZE);
  ASSERT_EQ(count, 3u);
  std::vector<nvmlProcessInfo_t> infos(count);
  ASSERT_EQ(Lib().nvmlDeviceGetComputeRunningProcesses_v3(Handle(0), &count, infos.data()),
            NVML_SUCCESS);
  std::map<unsigned, unsigned long long> want;
  for (auto& p : st.processes)
    if (p.device == st.gpus[0].uuid)
      want[static_cast<unsigned>(p.pid)] = static_cast<unsigned long long>(p.used_memory_bytes);
  std::map<unsigned, unsigned long long> got;
  for (auto& p : infos) {
    got[p.pid] = p.usedGpuMemory;
    EXPECT_EQ(p.gpuInstanceId, 0xFFFFFFFFu);
  }
  EXPECT_EQ(got, want);
  count = 0;
  EXPECT_EQ(Lib().nvmlDeviceGetMPSComputeRunningProcesses_v3(Handle(0), &count, nullptr),
            NVML_SUCCESS);
  EXPECT_EQ(count, 0u);

  // Energy: a counter that grows at the simulated power.
  unsigned long long e0 = 0, e1 = 0;
  unsigned power = 0;
  ASSERT_EQ(Lib().nvmlDeviceGetTotalEnergyConsumption(Handle(0), &e0), NVML_SUCCESS);
  ASSERT_EQ(Lib().nvmlDeviceGetPowerUsage(Handle(0), &power), NVML_SUCCESS);
  EXPECT_GT(e0, 30ull * 50 * 1000 * 9 / 10);  // 30 s of history at ≥ 50 W idle
  EXPECT_GT(power, 50'000u);                  // A100: 50 W idle, busier here
  EXPECT_LT(power, 400'000u);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  ASSERT_EQ(Lib().nvmlDeviceGetTotalEnergyConsumption(Handle(0), &e1), NVML_SUCCESS);
  EXPECT_GT(e1, e0);
}

TEST_F(StandinTest, PerProcessSamplesMatchDuties) {
  Open("ts");
  nvmlDevice_t d = Handle(0);
  nvmlUtilization_t util{};
  ASSERT_EQ(Lib().nvmlDeviceGetUtilizationRates(d, &util), NVML_SUCCESS);
  EXPECT_NEAR(util.gpu, 50, 5);  // 0.2 + 0.3

  // Device samples: NULL sizes with SUCCESS, too small is INSUFFICIENT_SIZE.
  nvmlValueType_t vt;
  unsigned n = 0;
  ASSERT_EQ(Lib().nvmlDeviceGetSamples(d, NVML_GPU_UTILIZATION_SAMPLES, 0, &vt, &n, nullptr),
            NVML_SUCCESS);
  EXPECT_GE(n, 29u);
  std::vector<nvmlSample_t> samples(n);
  unsigned small = 3;
  EXPECT_EQ(
      Lib().nvmlDeviceGetSamples(d, NVML_GPU_UTILIZATION_SAMPLES, 0, &vt, &small, samples.data()),
      NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_GE(small, n);
  samples.resize(small);
  ASSERT_EQ(
      Lib().nvmlDeviceGetSamples(d, NVML_GPU_UTILIZATION_SAMPLES, 0, &vt, &small, samples.data()),
      NVML_SUCCESS);
  EXPECT_EQ(vt, NVML_VALUE_TYPE_UNSIGNED_INT);
  for (auto& s : samples) {
    EXPECT_NEAR(s.sampleValue.uiVal, 50, 5);
    EXPECT_LE(s.timeStamp, static_cast<unsigned long long>(NowUs()));
  }

  // Per-process samples: NULL sizes with INSUFFICIENT_SIZE (what real drivers do).
  unsigned count = 0;
  ASSERT_EQ(Lib().nvmlDeviceGetProcessUtilization(d, nullptr, &count, 0),
            NVML_ERROR_INSUFFICIENT_SIZE);
  // One sample per 1 s interval for each process that owned one of its sample windows (each
  // window goes whole to one process, as on a real GPU): at least one a second.
  ASSERT_GE(count, 29u);
  std::vector<nvmlProcessUtilizationSample_t> ps(count);
  unsigned too_small = 5;
  EXPECT_EQ(Lib().nvmlDeviceGetProcessUtilization(d, ps.data(), &too_small, 0),
            NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_GE(too_small, count);
  ps.resize(too_small + 16);
  count = static_cast<unsigned>(ps.size());
  ASSERT_EQ(Lib().nvmlDeviceGetProcessUtilization(d, ps.data(), &count, 0), NVML_SUCCESS);
  ps.resize(count);

  // Σ smUtil x period per pod over the history, against the scenario's duties.
  sim::NodeState st = StateNow("ts");
  std::map<unsigned, std::string> pod_of;
  for (auto& p : st.processes) pod_of[static_cast<unsigned>(p.pid)] = p.consumer->pod;
  std::map<std::string, double> pct_s;
  std::map<unsigned long long, unsigned> per_interval;  // Σ smUtil of one interval's samples
  unsigned long long last = 0;
  for (auto& s : ps) {
    ASSERT_TRUE(pod_of.contains(s.pid)) << s.pid;
    pct_s[pod_of[s.pid]] += s.smUtil;  // one sample per 1 s interval
    per_interval[s.timeStamp] += s.smUtil;
    last = std::max(last, s.timeStamp);
  }
  double seconds = static_cast<double>(per_interval.size());
  EXPECT_FALSE(pct_s.contains("idle-0"));  // idle processes give no samples
  // The windows' owners share the device's value: no interval sums over 100%, and together
  // the two pods' samples are the device's 50% (each pod's own part is a draw, not its duty).
  for (const auto& [ts, sum] : per_interval) EXPECT_LE(sum, 100u) << ts;
  EXPECT_NEAR((pct_s["p20-0"] + pct_s["p30-0"]) / seconds, 50, 3);
  EXPECT_GT(pct_s["p20-0"], 0);
  EXPECT_GT(pct_s["p30-0"], 0);

  // lastSeenTimeStamp: nothing newer than the newest sample, until time moves on.
  count = static_cast<unsigned>(ps.size());
  EXPECT_EQ(Lib().nvmlDeviceGetProcessUtilization(d, ps.data(), &count, last),
            NVML_ERROR_NOT_FOUND);
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  count = static_cast<unsigned>(ps.size());
  ASSERT_EQ(Lib().nvmlDeviceGetProcessUtilization(d, ps.data(), &count, last), NVML_SUCCESS);
  EXPECT_GE(count, 3u);
  EXPECT_LE(count, 9u);
  for (unsigned i = 0; i < count; ++i) EXPECT_GT(ps[i].timeStamp, last);

  // The R550 form answers the same samples.
  nvmlProcessesUtilizationInfo_t info{};
  info.version = nvmlProcessesUtilizationInfo_v1;
  info.lastSeenTimeStamp = last;
  ASSERT_EQ(Lib().nvmlDeviceGetProcessesUtilizationInfo(d, &info), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_GE(info.processSamplesCount, count);
  std::vector<nvmlProcessUtilizationInfo_v1_t> arr(info.processSamplesCount + 8);
  info.procUtilArray = arr.data();
  info.processSamplesCount = static_cast<unsigned>(arr.size());
  ASSERT_EQ(Lib().nvmlDeviceGetProcessesUtilizationInfo(d, &info), NVML_SUCCESS);
  for (unsigned i = 0; i < info.processSamplesCount; ++i) {
    EXPECT_GT(arr[i].timeStamp, last);
    EXPECT_TRUE(pod_of.contains(arr[i].pid));
  }
  info.version = 0;
  EXPECT_EQ(Lib().nvmlDeviceGetProcessesUtilizationInfo(d, &info),
            NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
}

TEST_F(StandinTest, MigDevices) {
  Open("mig");
  nvmlDevice_t gpu = Handle(0);
  sim::NodeState st = StateNow("mig");
  EXPECT_EQ(Name(gpu), "NVIDIA H100 80GB HBM3");
  unsigned mode = 0, pending = 0, max = 0;
  ASSERT_EQ(Lib().nvmlDeviceGetMigMode(gpu, &mode, &pending), NVML_SUCCESS);
  EXPECT_EQ(mode, static_cast<unsigned>(NVML_DEVICE_MIG_ENABLE));
  EXPECT_EQ(pending, static_cast<unsigned>(NVML_DEVICE_MIG_ENABLE));
  ASSERT_EQ(Lib().nvmlDeviceGetMaxMigDeviceCount(gpu, &max), NVML_SUCCESS);
  EXPECT_EQ(max, 7u);
  std::vector<nvmlDevice_t> migs;
  for (unsigned i = 0; i < max; ++i) {
    nvmlDevice_t m = nullptr;
    nvmlReturn_t r = Lib().nvmlDeviceGetMigDeviceHandleByIndex(gpu, i, &m);
    if (i < 3) {
      ASSERT_EQ(r, NVML_SUCCESS);
      migs.push_back(m);
    } else {
      EXPECT_EQ(r, NVML_ERROR_NOT_FOUND);
    }
  }
  const char* profiles[] = {"3g.40gb", "2g.20gb", "1g.10gb"};
  std::set<nvmlDevice_t> distinct{gpu};
  for (std::size_t i = 0; i < migs.size(); ++i) {
    distinct.insert(migs[i]);
    EXPECT_EQ(Uuid(migs[i]), st.mig_instances[i].uuid.str());
    EXPECT_EQ(Name(migs[i]), std::string("NVIDIA H100 80GB HBM3 MIG ") + profiles[i]);
    nvmlDevice_t parent = nullptr;
    ASSERT_EQ(Lib().nvmlDeviceGetDeviceHandleFromMigDeviceHandle(migs[i], &parent), NVML_SUCCESS);
    EXPECT_EQ(parent, gpu);
    unsigned gi = 0;
    EXPECT_EQ(Lib().nvmlDeviceGetGpuInstanceId(migs[i], &gi), NVML_SUCCESS);
    nvmlDeviceAttributes_t attr{};
    ASSERT_EQ(Lib().nvmlDeviceGetAttributes_v2(migs[i], &attr), NVML_SUCCESS);
    EXPECT_EQ(attr.gpuInstanceSliceCount, static_cast<unsigned>(profiles[i][0] - '0'));
    nvmlUtilization_t u;
    EXPECT_EQ(Lib().nvmlDeviceGetUtilizationRates(migs[i], &u), NVML_ERROR_NOT_SUPPORTED);
    unsigned c = 0;
    EXPECT_EQ(Lib().nvmlDeviceGetProcessUtilization(migs[i], nullptr, &c, 0),
              NVML_ERROR_NOT_SUPPORTED);
  }
  EXPECT_EQ(distinct.size(), 4u);
  nvmlUtilization_t u;
  EXPECT_EQ(Lib().nvmlDeviceGetUtilizationRates(gpu, &u), NVML_ERROR_NOT_SUPPORTED);
  unsigned c = 0;
  EXPECT_EQ(Lib().nvmlDeviceGetProcessUtilization(gpu, nullptr, &c, 0), NVML_ERROR_NOT_SUPPORTED);
  unsigned gi = 0;
  EXPECT_EQ(Lib().nvmlDeviceGetGpuInstanceId(gpu, &gi), NVML_ERROR_NOT_SUPPORTED);
  // The 3g instance runs m1's process; the parent lists it too, with its GPU instance.
  nvmlProcessInfo_t info[4];
  unsigned count = 4;
  ASSERT_EQ(Lib().nvmlDeviceGetComputeRunningProcesses_v3(migs[0], &count, info), NVML_SUCCESS);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(info[0].usedGpuMemory, static_cast<unsigned long long>(10 * kGiB));
  EXPECT_EQ(static_cast<int>(info[0].pid), st.processes.at(0).pid);
  unsigned pid = info[0].pid, mig_gi = 0;
  ASSERT_EQ(Lib().nvmlDeviceGetGpuInstanceId(migs[0], &mig_gi), NVML_SUCCESS);
  count = 4;
  ASSERT_EQ(Lib().nvmlDeviceGetComputeRunningProcesses_v3(gpu, &count, info), NVML_SUCCESS);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(info[0].pid, pid);
  EXPECT_EQ(info[0].gpuInstanceId, mig_gi);
  nvmlMemory_t mem{};
  ASSERT_EQ(Lib().nvmlDeviceGetMemoryInfo(migs[0], &mem), NVML_SUCCESS);
  EXPECT_EQ(mem.total, 40ull * 1000 * 1000 * 1000);
  unsigned long long energy = 0;
  EXPECT_EQ(Lib().nvmlDeviceGetTotalEnergyConsumption(migs[0], &energy), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(Lib().nvmlDeviceGetTotalEnergyConsumption(gpu, &energy), NVML_SUCCESS);
}

// As a real H200 answered (../shared/data/h200 run1-mps): the client in both process lists,
// the MPS server in the compute list only, and per-process samples for the server alone.
TEST_F(StandinTest, MpsClients) {
  Open("mps");
  nvmlDevice_t d = Handle(0);
  EXPECT_EQ(Name(d), "NVIDIA L4");
  const sim::NodeState st = StateNow("mps");
  ASSERT_EQ(st.processes.size(), 2u);
  const int client = st.processes.at(0).pid, server = st.processes.at(1).pid;
  EXPECT_TRUE(IsMpsServer(st.processes.at(1).comm));
  nvmlProcessInfo_t info[4];
  unsigned count = 4;
  ASSERT_EQ(Lib().nvmlDeviceGetComputeRunningProcesses_v3(d, &count, info), NVML_SUCCESS);
  ASSERT_EQ(count, 2u);
  EXPECT_EQ(static_cast<int>(info[0].pid), client);
  EXPECT_EQ(static_cast<int>(info[1].pid), server);
  EXPECT_EQ(info[1].usedGpuMemory, 66ull * kMiB);
  count = 4;
  ASSERT_EQ(Lib().nvmlDeviceGetMPSComputeRunningProcesses_v3(d, &count, info), NVML_SUCCESS);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(static_cast<int>(info[0].pid), client);
  std::vector<nvmlProcessUtilizationSample_t> samples(64);
  unsigned c = static_cast<unsigned>(samples.size());
  ASSERT_EQ(Lib().nvmlDeviceGetProcessUtilization(d, samples.data(), &c, 0), NVML_SUCCESS);
  ASSERT_GT(c, 0u);
  for (unsigned i = 0; i < c; ++i) EXPECT_EQ(static_cast<int>(samples[i].pid), server);
  nvmlUtilization_t u{};
  ASSERT_EQ(Lib().nvmlDeviceGetUtilizationRates(d, &u), NVML_SUCCESS);
  EXPECT_NEAR(u.gpu, 40, 5);
  unsigned mode, pending;
  EXPECT_EQ(Lib().nvmlDeviceGetMigMode(d, &mode, &pending), NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(StandinTest, Faults) {
  Open("ts");
  nvmlDevice_t d0 = Handle(0), d1 = Handle(1);
  WriteFaults("# lose the second GPU\nlost 1\nunsupported nvmlDeviceGetPowerUsage\n");
  nvmlMemory_t mem{};
  EXPECT_EQ(Lib().nvmlDeviceGetMemoryInfo(d1, &mem), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(Lib().nvmlDeviceGetMemoryInfo(d0, &mem), NVML_SUCCESS);
  nvmlDevice_t h = nullptr;
  EXPECT_EQ(Lib().nvmlDeviceGetHandleByIndex_v2(1, &h), NVML_ERROR_GPU_IS_LOST);
  unsigned power = 0;
  EXPECT_EQ(Lib().nvmlDeviceGetPowerUsage(d0, &power), NVML_ERROR_NOT_SUPPORTED);

  WriteFaults("count 3\nerror nvmlDeviceGetName UNKNOWN\n");
  unsigned n = 0;
  ASSERT_EQ(Lib().nvmlDeviceGetCount_v2(&n), NVML_SUCCESS);
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(Lib().nvmlDeviceGetHandleByIndex_v2(2, &h), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(Lib().nvmlDeviceGetMemoryInfo(d1, &mem), NVML_SUCCESS);
  char name[96];
  EXPECT_EQ(Lib().nvmlDeviceGetName(d0, name, sizeof name), NVML_ERROR_UNKNOWN);

  WriteFaults("hang nvmlDeviceGetPowerUsage 1.2\n");
  auto t0 = std::chrono::steady_clock::now();
  // Another call is not blocked by a hung one.
  std::thread hung([&] { EXPECT_EQ(Lib().nvmlDeviceGetPowerUsage(d0, &power), NVML_SUCCESS); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(Lib().nvmlDeviceGetMemoryInfo(d0, &mem), NVML_SUCCESS);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1000));
  hung.join();
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1200));

  WriteFaults("bogus line\n");  // malformed: the previous faults stay
  t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(Lib().nvmlDeviceGetPowerUsage(d0, &power), NVML_SUCCESS);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1200));
  fs::remove(dir_ / "faults.txt");  // missing: no faults
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(Lib().nvmlDeviceGetPowerUsage(d0, &power), NVML_SUCCESS);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(500));
}

// GPM between two samples a second or so apart, for `ids` (numMetrics = ids.size()).
struct GpmReading {
  nvmlReturn_t ret = NVML_ERROR_UNKNOWN;
  std::vector<nvmlGpmMetric_t> metrics;
};
GpmReading GpmBetween(nvmlGpmSample_t a, nvmlGpmSample_t b, const std::vector<unsigned>& ids) {
  auto get = std::make_unique<nvmlGpmMetricsGet_t>();
  get->version = NVML_GPM_METRICS_GET_VERSION;
  get->numMetrics = static_cast<unsigned>(ids.size());
  get->sample1 = a;
  get->sample2 = b;
  for (std::size_t i = 0; i < ids.size(); ++i) get->metrics[i].metricId = ids[i];
  GpmReading r;
  r.ret = Lib().nvmlGpmMetricsGet(get.get());
  r.metrics.assign(get->metrics, get->metrics + ids.size());
  return r;
}

const std::vector<unsigned> kGpmIds = {
    NVML_GPM_METRIC_GRAPHICS_UTIL, NVML_GPM_METRIC_SM_UTIL, NVML_GPM_METRIC_SM_OCCUPANCY,
    NVML_GPM_METRIC_ANY_TENSOR_UTIL, NVML_GPM_METRIC_DRAM_BW_UTIL};

// An H200 GPU: the metrics between two samples are the workload's busy time and efficiency.
TEST_F(StandinTest, GpmOnHopper) {
  Open("hx");
  nvmlDevice_t busy = Handle(0), idle = Handle(1);
  nvmlGpmSupport_t support{NVML_GPM_SUPPORT_VERSION, 0};
  ASSERT_EQ(Lib().nvmlGpmQueryDeviceSupport(busy, &support), NVML_SUCCESS);
  EXPECT_EQ(support.isSupportedDevice, 1u);
  nvmlGpmSupport_t wrong{0x01000008, 0};  // the NVML_STRUCT_VERSION form is not this one's
  EXPECT_EQ(Lib().nvmlGpmQueryDeviceSupport(busy, &wrong), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);

  nvmlGpmSample_t s[4] = {};
  for (auto& x : s) ASSERT_EQ(Lib().nvmlGpmSampleAlloc(&x), NVML_SUCCESS);
  EXPECT_EQ(GpmBetween(s[0], s[1], kGpmIds).ret, NVML_ERROR_INVALID_ARGUMENT);  // not filled
  ASSERT_EQ(Lib().nvmlGpmSampleGet(busy, s[0]), NVML_SUCCESS);
  ASSERT_EQ(Lib().nvmlGpmSampleGet(idle, s[2]), NVML_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_EQ(Lib().nvmlGpmSampleGet(busy, s[1]), NVML_SUCCESS);
  ASSERT_EQ(Lib().nvmlGpmSampleGet(idle, s[3]), NVML_SUCCESS);
  GpmReading r = GpmBetween(s[0], s[1], kGpmIds);
  ASSERT_EQ(r.ret, NVML_SUCCESS);
  for (const auto& m : r.metrics) EXPECT_EQ(m.nvmlReturn, NVML_SUCCESS) << m.metricId;
  // duty 0.8 on GPU 0: graphics ~80 (NVML's busy, ±dither), SM 40, occupancy 16, tensor 10,
  // DRAM 60; the counters' dither is ±0.5 point.
  EXPECT_NEAR(r.metrics[0].value, 80, 3);
  EXPECT_NEAR(r.metrics[1].value, 40, 0.6);
  EXPECT_NEAR(r.metrics[2].value, 16, 0.6);
  EXPECT_NEAR(r.metrics[3].value, 10, 0.6);
  EXPECT_NEAR(r.metrics[4].value, 60, 0.6);
  EXPECT_STREQ(r.metrics[1].metricInfo.unit, "%");
  // Two decimals.
  EXPECT_DOUBLE_EQ(r.metrics[1].value, std::round(r.metrics[1].value * 100) / 100);
  GpmReading quiet = GpmBetween(s[2], s[3], kGpmIds);
  ASSERT_EQ(quiet.ret, NVML_SUCCESS);
  for (const auto& m : quiet.metrics) EXPECT_EQ(m.value, 0) << m.metricId;
  // Samples of two units, or in the wrong order, do not make a metric; unknown ids are not
  // modelled; a wrong version is refused.
  EXPECT_EQ(GpmBetween(s[0], s[3], kGpmIds).ret, NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(GpmBetween(s[1], s[0], kGpmIds).ret, NVML_ERROR_INVALID_ARGUMENT);
  GpmReading pcie = GpmBetween(s[0], s[1], {20});  // PCIE_TX_PER_SEC
  ASSERT_EQ(pcie.ret, NVML_SUCCESS);
  EXPECT_EQ(pcie.metrics[0].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
  auto bad = std::make_unique<nvmlGpmMetricsGet_t>();
  bad->version = 2;
  EXPECT_EQ(Lib().nvmlGpmMetricsGet(bad.get()), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  // A GPU not in MIG mode has no GPU instances.
  EXPECT_EQ(Lib().nvmlGpmMigSampleGet(busy, 1, s[0]), NVML_ERROR_NOT_FOUND);
  for (auto& x : s) EXPECT_EQ(Lib().nvmlGpmSampleFree(x), NVML_SUCCESS);
  EXPECT_EQ(Lib().nvmlGpmSampleFree(s[0]), NVML_ERROR_INVALID_ARGUMENT);  // freed already
  EXPECT_EQ(Lib().nvmlGpmSampleGet(busy, s[0]), NVML_ERROR_INVALID_ARGUMENT);
}

// MIG on Hopper: per GPU instance through the parent; the busy instance's graphics activity is
// its duty, relative to the instance.
TEST_F(StandinTest, GpmPerMigInstance) {
  Open("mig");
  nvmlDevice_t gpu = Handle(0);
  nvmlDevice_t mig0 = nullptr;
  ASSERT_EQ(Lib().nvmlDeviceGetMigDeviceHandleByIndex(gpu, 0, &mig0), NVML_SUCCESS);
  unsigned gi = 0;
  ASSERT_EQ(Lib().nvmlDeviceGetGpuInstanceId(mig0, &gi), NVML_SUCCESS);
  nvmlGpmSample_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  for (auto* x : {&a, &b, &c, &d}) ASSERT_EQ(Lib().nvmlGpmSampleAlloc(x), NVML_SUCCESS);
  ASSERT_EQ(Lib().nvmlGpmMigSampleGet(gpu, gi, a), NVML_SUCCESS);
  ASSERT_EQ(Lib().nvmlGpmSampleGet(gpu, c), NVML_SUCCESS);  // the whole GPU: its instances
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_EQ(Lib().nvmlGpmMigSampleGet(gpu, gi, b), NVML_SUCCESS);
  ASSERT_EQ(Lib().nvmlGpmSampleGet(gpu, d), NVML_SUCCESS);
  GpmReading r = GpmBetween(a, b, kGpmIds);
  ASSERT_EQ(r.ret, NVML_SUCCESS);
  EXPECT_NEAR(r.metrics[0].value, 50, 0.6);        // m1's duty 0.5, GPM-measured
  EXPECT_NEAR(r.metrics[1].value, 50 * 0.6, 0.6);  // default efficiency
  EXPECT_NEAR(r.metrics[4].value, 50 * 0.4, 0.6);
  GpmReading whole = GpmBetween(c, d, kGpmIds);
  ASSERT_EQ(whole.ret, NVML_SUCCESS);
  EXPECT_NEAR(whole.metrics[0].value, 50.0 * 3 / 7, 0.6);
  EXPECT_EQ(Lib().nvmlGpmMigSampleGet(gpu, 99, a), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(Lib().nvmlGpmMigSampleGet(mig0, gi, a), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(Lib().nvmlGpmSampleGet(mig0, a), NVML_ERROR_INVALID_ARGUMENT);
  for (auto* x : {a, b, c, d}) EXPECT_EQ(Lib().nvmlGpmSampleFree(x), NVML_SUCCESS);
}

// Pre-Hopper: isSupportedDevice 0 and NOT_SUPPORTED samples, as real drivers answer.
TEST_F(StandinTest, NoGpmBeforeHopper) {
  Open("ts");
  nvmlGpmSupport_t support{NVML_GPM_SUPPORT_VERSION, 7};
  ASSERT_EQ(Lib().nvmlGpmQueryDeviceSupport(Handle(0), &support), NVML_SUCCESS);
  EXPECT_EQ(support.isSupportedDevice, 0u);
  nvmlGpmSample_t s = nullptr;
  ASSERT_EQ(Lib().nvmlGpmSampleAlloc(&s), NVML_SUCCESS);
  EXPECT_EQ(Lib().nvmlGpmSampleGet(Handle(0), s), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(Lib().nvmlGpmMigSampleGet(Handle(0), 1, s), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(Lib().nvmlGpmSampleFree(s), NVML_SUCCESS);
  // Faults apply to GPM calls like to any other.
  WriteFaults("error nvmlGpmSampleAlloc MEMORY\n");
  EXPECT_EQ(Lib().nvmlGpmSampleAlloc(&s), NVML_ERROR_MEMORY);
}

TEST_F(StandinTest, InitIsReferenceCounted) {
  Open("mps");
  EXPECT_EQ(Lib().nvmlInit_v2(), NVML_SUCCESS);
  EXPECT_EQ(Lib().nvmlShutdown(), NVML_SUCCESS);
  unsigned n = 0;
  EXPECT_EQ(Lib().nvmlDeviceGetCount_v2(&n), NVML_SUCCESS);
  EXPECT_EQ(n, 1u);
}

}  // namespace
}  // namespace gpuledger
