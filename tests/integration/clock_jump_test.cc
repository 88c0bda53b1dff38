// A wall-clock step under a running agent, end to end through the real pieces:
// the real NVML source (over a fake driver table whose samples are stamped with
// the stepped wall clock, as a driver's are), the real Collector and its
// rendered exposition, parsed and fed to the server's ingest::CounterLedger
// with scrape times from the server's own, unstepped clock. The expected
// figures come from the run's schedule (a GPU 100% busy, one pod holding it),
// never from the code under test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/collector.h"
#include "common/clock.h"
#include "ingest/counter_ledger.h"
#include "prometheus/exposition_parser.h"
#include "sim/simulated_node.h"
#include "sources/nvml/nvml_api.h"
#include "sources/nvml/nvml_source.h"
#include "sources/procfs/proc_source.h"

namespace gpuledger {
namespace {

constexpr Micros kS = kMicrosPerSecond;
constexpr Micros kHour = kMicrosPerHour;
constexpr Micros kH0 = 1'800'000'000LL * kS;   // an hour boundary
constexpr Micros kStart = kH0 + 20 * 60 * kS;  // the agent starts 20 minutes into it
constexpr int kSeconds = 2 * 3600;             // and runs two hours, one cycle a second
constexpr int kJumpSecond = 1800;              // the wall clock steps 50 minutes in
constexpr int kScrapeEvery = 15;               // seconds
constexpr unsigned kPid = 4242;
constexpr char kGpu[] = "GPU-0c1e0c1e-0000-4000-8000-000000000001";

// One GPU, 100% busy with one process, as NVML shows it: samples stamped with
// the wall clock when taken, the newest kKept kept (a driver's buffer is
// finite; the old ones age out).
struct FakeDriver {
  static constexpr std::size_t kKept = 120;
  std::deque<nvmlSample_t> util;
  std::deque<nvmlProcessUtilizationInfo_v1_t> proc;

  void TakeSample(Micros wall_us) {
    const auto ts = static_cast<unsigned long long>(wall_us);
    nvmlSample_t s{};
    s.timeStamp = ts;
    s.sampleValue.uiVal = 100;
    util.push_back(s);
    proc.push_back({ts, kPid, 100, 0, 0, 0, 0, 0});
    if (util.size() > kKept) util.pop_front();
    if (proc.size() > kKept) proc.pop_front();
  }
};
FakeDriver* g_driver = nullptr;

template <typename T>
std::vector<T> Newer(const std::deque<T>& all, unsigned long long last_seen) {
  std::vector<T> out;
  for (const T& s : all)
    if (s.timeStamp > last_seen) out.push_back(s);
  return out;
}

nvmlReturn_t CopyString(const char* s, char* out, unsigned length) {
  if (std::strlen(s) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, s, std::strlen(s) + 1);
  return NVML_SUCCESS;
}

nvml::NvmlApi FakeNvml() {
  nvml::NvmlApi api;
  api.init = [] { return NVML_SUCCESS; };
  api.shutdown = [] { return NVML_SUCCESS; };
  api.device_count = [](unsigned* c) {
    *c = 1;
    return NVML_SUCCESS;
  };
  api.handle_by_index = [](unsigned i, nvmlDevice_t* h) {
    if (i != 0) return NVML_ERROR_INVALID_ARGUMENT;
    *h = reinterpret_cast<nvmlDevice_t>(g_driver);
    return NVML_SUCCESS;
  };
  api.uuid = [](nvmlDevice_t, char* out, unsigned n) { return CopyString(kGpu, out, n); };
  api.name = [](nvmlDevice_t, char* out, unsigned n) {
    return CopyString("NVIDIA H100 80GB HBM3", out, n);
  };
  api.memory_info = [](nvmlDevice_t, nvmlMemory_t* m) {
    *m = {80 * kGiB, 76 * kGiB, 4 * kGiB};
    return NVML_SUCCESS;
  };
  api.samples = [](nvmlDevice_t, nvmlSamplingType_t type, unsigned long long last_seen,
                   nvmlValueType_t* value_type, unsigned* count, nvmlSample_t* out) {
    if (type != NVML_GPU_UTILIZATION_SAMPLES) return NVML_ERROR_NOT_SUPPORTED;
    auto newer = Newer(g_driver->util, last_seen);
    if (newer.empty()) return NVML_ERROR_NOT_FOUND;
    *value_type = NVML_VALUE_TYPE_UNSIGNED_INT;
    if (out == nullptr || *count < newer.size()) {
      *count = static_cast<unsigned>(newer.size());
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    std::copy(newer.begin(), newer.end(), out);
    *count = static_cast<unsigned>(newer.size());
    return NVML_SUCCESS;
  };
  api.processes_utilization_info = [](nvmlDevice_t, nvmlProcessesUtilizationInfo_t* info) {
    if (info->version != nvmlProcessesUtilizationInfo_v1)
      return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    auto newer = Newer(g_driver->proc, info->lastSeenTimeStamp);
    if (newer.empty()) return NVML_ERROR_NOT_FOUND;
    if (info->procUtilArray == nullptr || info->processSamplesCount < newer.size()) {
      info->processSamplesCount = static_cast<unsigned>(newer.size());
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    std::copy(newer.begin(), newer.end(), info->procUtilArray);
    info->processSamplesCount = static_cast<unsigned>(newer.size());
    return NVML_SUCCESS;
  };
  api.compute_processes = [](nvmlDevice_t, unsigned* count, nvmlProcessInfo_t* out) {
    if (out == nullptr || *count < 1) {
      *count = 1;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    out[0] = {kPid, static_cast<unsigned long long>(4 * kGiB), 0xFFFFFFFFu, 0xFFFFFFFFu, 0};
    *count = 1;
    return NVML_SUCCESS;
  };
  return api;
}

// The pod that holds the GPU: its /proc entry, kubelet grant and CRI container.
NodeSnapshot PodOnTheGpu() {
  const ConsumerRef pod{"ml", "train-0", PodUid{"0c1e0c1e-0000-4000-8000-00000000a001"}, "main"};
  NodeSnapshot s;
  s.node = "n1";
  s.gpus = {PhysicalGpu{GpuUuid{kGpu}, "H100-80GB", 80 * kGiB}};
  s.grants = {Grant{pod, kGpu, "nvidia.com/gpu"}};
  ProcessObservation p;
  p.pid = static_cast<int>(kPid);
  p.device = GpuUuid{kGpu};
  p.consumer = pod;
  p.used_memory_bytes = 4 * kGiB;
  s.processes = {p};
  return s;
}

double Value(const prometheus::Exposition& e, std::string_view name) {
  for (const auto& s : e.samples)
    if (s.name == name) return s.value;
  ADD_FAILURE() << name << " is not in the exposition";
  return -1;
}

struct Totals {
  std::map<Micros, GpuMicros> metered;  // per hour
  GpuMicros busy = 0, allocated = 0, compute = 0, unmetered_in_run = 0;
  double jumps = -1;
  double last_cycle_s = 0;
};

// Runs the agent for kSeconds with the wall clock stepping by `step_us` at
// kJumpSecond, scraped every kScrapeEvery seconds of the server's clock.
Totals RunWithWallStep(Micros step_us) {
  FakeDriver driver;
  g_driver = &driver;
  ManualClock agent_clock(kStart, 42 * kS);  // the monotonic origin is arbitrary
  auto gpus = nvml::OpenNvmlSource(FakeNvml(), nvml::NvmlSourceOptions{}, agent_clock);
  sim::SimulatedNode world("n1");
  world.Show(PodOnTheGpu());
  procfs::ProcSource procs(world);
  agent::Collector collector(agent::CollectorOptions{"n1"}, *gpus, procs, &world, &world,
                             agent_clock);
  ingest::CounterLedger ledger("test", [](const ConsumerRef& r) { return ConsumerInfo{r}; });
  prometheus::Exposition last;
  auto scrape = [&](int second) {
    auto parsed = prometheus::ParseExposition(collector.Exposition()->text);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    last = *parsed;
    // The server stamps a scrape with its own clock, which did not step.
    ledger.Feed(ingest::TargetScrape{"10.0.0.1:9400", kStart + second * kS, parsed->samples});
  };

  collector.Cycle();  // the baseline
  scrape(0);
  for (int second = 1; second <= kSeconds; ++second) {
    // Two samples a second; a step falls between them, so one is on each
    // timeline.
    agent_clock.Advance(kS / 2);
    driver.TakeSample(agent_clock.Now().wall_us);
    if (second == kJumpSecond) agent_clock.StepWall(step_us);
    agent_clock.Advance(kS / 2);
    driver.TakeSample(agent_clock.Now().wall_us);
    collector.Cycle();
    if (second % kScrapeEvery == 0) scrape(second);
  }
  g_driver = nullptr;

  Totals t;
  for (const LedgerHour& h : ledger.Hours(INT64_MAX)) {
    if (h.device.gpu.value != kGpu) continue;
    t.metered[h.device.hour_us] += h.device.metered_us;
    t.busy += h.device.busy_us;
    // Inside the run every microsecond was metered (the first and last hours
    // are partly outside).
    const Micros inside = std::min(h.device.hour_us + kHour, kStart + kSeconds * kS) -
                          std::max(h.device.hour_us, kStart);
    t.unmetered_in_run += h.device.unmetered_us - (kHour - inside);
    for (const UsageRow& r : h.usage) {
      t.allocated += r.allocated_us;
      t.compute += r.compute_us;
    }
  }
  t.jumps = Value(last, "gpuledger_agent_clock_jumps_total");
  t.last_cycle_s = Value(last, "gpuledger_agent_last_cycle_timestamp_seconds");
  return t;
}

class WallClockStep : public ::testing::TestWithParam<Micros> {};

TEST_P(WallClockStep, MetersMonotonicTimeExactlyAndCountsOneJump) {
  const Micros step = GetParam();
  const Totals t = RunWithWallStep(step);
  // What ran, from the schedule: two hours of monotonic time from 20 minutes
  // past kH0, the GPU busy all of it, the pod holding all of it.
  const std::map<Micros, GpuMicros> want = {
      {kH0, 40 * 60 * kS}, {kH0 + kHour, kHour}, {kH0 + 2 * kHour, 20 * 60 * kS}};
  EXPECT_EQ(t.metered, want);
  for (const auto& [hour, metered] : t.metered) EXPECT_LE(metered, kHour) << hour;
  const GpuMicros run_us = kSeconds * kS;
  EXPECT_EQ(t.busy, run_us);
  EXPECT_EQ(t.allocated, run_us);
  EXPECT_EQ(t.compute, run_us);
  EXPECT_EQ(t.unmetered_in_run, 0);
  EXPECT_EQ(t.jumps, 1);
  // The exposition's own timestamps follow the wall clock, step and all.
  EXPECT_DOUBLE_EQ(t.last_cycle_s, static_cast<double>(kStart + run_us + step) / 1e6);
}

INSTANTIATE_TEST_SUITE_P(PlusAndMinusAnHour, WallClockStep,
                         ::testing::Values(Micros{kHour}, Micros{-kHour}),
                         [](const auto& info) { return info.param > 0 ? "Forward" : "Back"; });

}  // namespace
}  // namespace gpuledger
