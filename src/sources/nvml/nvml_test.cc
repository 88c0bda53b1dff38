// NvmlGpuSource over injected fake tables: no GPU, no .so (the stand-in library covers dlopen).

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "sources/nvml/nvml_api.h"
#include "sources/nvml/nvml_decode.h"
#include "sources/nvml/nvml_source.h"
#include "sources/nvml/sample_stream.h"
#include "sources/nvml/watchdog.h"

namespace gpuledger::nvml {
namespace {

constexpr Micros kT0 = 1'700'000'000'000'000;  // µs since the epoch
constexpr Micros kSecond = 1'000'000;

struct FakeDevice {
  std::string uuid;
  std::string name = "NVIDIA H100 80GB HBM3";
  nvmlMemory_t memory{80 * kGiB, 70 * kGiB, 10 * kGiB};
  bool lost = false;
  bool energy_supported = true;
  unsigned long long energy_mj = 1000;
  unsigned power_mw = 300'000;
  unsigned util = 50;
  bool samples_supported = true;
  std::vector<nvmlSample_t> util_samples;
  bool proc_util_supported = true;
  std::vector<nvmlProcessUtilizationInfo_v1_t> proc_samples;
  std::vector<nvmlProcessInfo_t> procs;
  std::vector<nvmlProcessInfo_t> mps_procs;
  unsigned mig_mode = NVML_DEVICE_MIG_DISABLE;
  std::vector<FakeDevice*> mig_slots;  // nullptr: empty slot
  std::optional<nvmlDeviceAttributes_t> attributes;
  std::vector<unsigned long long> proc_last_seen;  // lastSeenTimeStamp per per-process call
  std::vector<unsigned long long> sample_last_seen;
  int compute_calls = 0;
  int energy_calls = 0;
  // GPM. A physical GPU answers nvmlGpmQueryDeviceSupport; a MIG device is sampled through its
  // parent and its gpu_instance_id.
  nvmlReturn_t gpm_query_result = NVML_SUCCESS;
  unsigned gpm_supported = 0;              // isSupportedDevice
  unsigned gpu_instance_id = 0;            // MIG devices
  std::map<unsigned, double> gpm_percent;  // metric id -> percent since the previous sample
  std::map<unsigned, nvmlReturn_t> gpm_metric_result;  // metric id -> per-metric status
  nvmlReturn_t gpm_sample_result = NVML_SUCCESS;
  int gpm_query_calls = 0;
  int gpm_sample_calls = 0;
};

// The fake NVML the table's functions answer from. One per test (g_fake).
struct Fake {
  nvmlReturn_t init_result = NVML_SUCCESS;
  nvmlReturn_t count_result = NVML_SUCCESS;
  std::vector<std::unique_ptr<FakeDevice>> devices;  // physical, by index
  std::vector<std::unique_ptr<FakeDevice>> migs;     // owned MIG devices
  std::mutex mu;
  std::condition_variable cv;
  bool hang_power = false;  // nvmlDeviceGetPowerUsage blocks until released
  bool hang_gpm = false;    // nvmlGpmMetricsGet blocks until released
  bool hanging = false;
  // GPM sample buffers: live ones, and what went wrong with the others.
  std::set<nvmlGpmSample_t> gpm_live;
  int gpm_allocs = 0;
  int gpm_bad_frees = 0;    // a free of a buffer not live (double free, never allocated)
  int gpm_bad_samples = 0;  // a sample get or metrics get on a buffer not live
  std::vector<nvmlGpmMetricsGet_t> gpm_requests;  // what nvmlGpmMetricsGet was asked
  std::vector<std::pair<FakeDevice*, unsigned>> gpm_mig_samples;  // (parent, instance id)

  FakeDevice& Add(std::string uuid) {
    devices.push_back(std::make_unique<FakeDevice>());
    devices.back()->uuid = std::move(uuid);
    return *devices.back();
  }
  void Release() {
    std::lock_guard lock(mu);
    hang_power = false;
    hang_gpm = false;
    cv.notify_all();
  }
};
Fake* g_fake = nullptr;

}  // namespace
}  // namespace gpuledger::nvml

// The fake's GPM sample: which unit it read and what its metrics were then.
struct nvmlGpmSample_st {
  gpuledger::nvml::FakeDevice* device = nullptr;  // the unit sampled (GPU or MIG device)
  int sequence = 0;
  std::map<unsigned, double> percent;
  std::map<unsigned, nvmlReturn_t> result;
};

namespace gpuledger::nvml {
namespace {

FakeDevice* Dev(nvmlDevice_t h) { return reinterpret_cast<FakeDevice*>(h); }
nvmlDevice_t Handle(FakeDevice* d) { return reinterpret_cast<nvmlDevice_t>(d); }

nvmlReturn_t CopyString(const std::string& s, char* out, unsigned length) {
  if (s.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, s.c_str(), s.size() + 1);
  return NVML_SUCCESS;
}

template <typename T>
nvmlReturn_t FillList(const std::vector<T>& items, unsigned* count, T* out) {
  if (items.empty()) {
    *count = 0;
    return NVML_SUCCESS;
  }
  if (out == nullptr || *count < items.size()) {
    *count = static_cast<unsigned>(items.size());
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  std::copy(items.begin(), items.end(), out);
  *count = static_cast<unsigned>(items.size());
  return NVML_SUCCESS;
}

NvmlApi FakeApi() {
  NvmlApi api;
  api.init = [] { return g_fake->init_result; };
  api.shutdown = [] { return NVML_SUCCESS; };
  api.error_string = [](nvmlReturn_t) { return "fake error"; };
  api.driver_version = [](char* v, unsigned n) { return CopyString("550.54.15", v, n); };
  api.device_count = [](unsigned* c) {
    if (g_fake->count_result != NVML_SUCCESS) return g_fake->count_result;
    *c = static_cast<unsigned>(g_fake->devices.size());
    return NVML_SUCCESS;
  };
  api.handle_by_index = [](unsigned i, nvmlDevice_t* h) {
    if (i >= g_fake->devices.size()) return NVML_ERROR_INVALID_ARGUMENT;
    *h = Handle(g_fake->devices[i].get());
    return NVML_SUCCESS;
  };
  api.uuid = [](nvmlDevice_t h, char* out, unsigned n) {
    return Dev(h)->lost ? NVML_ERROR_GPU_IS_LOST : CopyString(Dev(h)->uuid, out, n);
  };
  api.name = [](nvmlDevice_t h, char* out, unsigned n) {
    return Dev(h)->lost ? NVML_ERROR_GPU_IS_LOST : CopyString(Dev(h)->name, out, n);
  };
  api.memory_info = [](nvmlDevice_t h, nvmlMemory_t* m) {
    if (Dev(h)->lost) return NVML_ERROR_GPU_IS_LOST;
    *m = Dev(h)->memory;
    return NVML_SUCCESS;
  };
  api.utilization_rates = [](nvmlDevice_t h, nvmlUtilization_t* u) {
    if (Dev(h)->lost) return NVML_ERROR_GPU_IS_LOST;
    *u = {Dev(h)->util, 10};
    return NVML_SUCCESS;
  };
  api.samples = [](nvmlDevice_t h, nvmlSamplingType_t type, unsigned long long last_seen,
                   nvmlValueType_t* value_type, unsigned* count, nvmlSample_t* out) {
    FakeDevice* d = Dev(h);
    if (d->lost) return NVML_ERROR_GPU_IS_LOST;
    if (!d->samples_supported || type != NVML_GPU_UTILIZATION_SAMPLES) {
      return NVML_ERROR_NOT_SUPPORTED;
    }
    d->sample_last_seen.push_back(last_seen);
    std::vector<nvmlSample_t> newer;
    for (const auto& s : d->util_samples) {
      if (s.timeStamp > last_seen) newer.push_back(s);
    }
    if (newer.empty()) return NVML_ERROR_NOT_FOUND;
    *value_type = NVML_VALUE_TYPE_UNSIGNED_INT;
    return FillList(newer, count, out);
  };
  api.processes_utilization_info = [](nvmlDevice_t h, nvmlProcessesUtilizationInfo_t* info) {
    FakeDevice* d = Dev(h);
    if (d->lost) return NVML_ERROR_GPU_IS_LOST;
    if (!d->proc_util_supported) return NVML_ERROR_NOT_SUPPORTED;
    if (info->version != nvmlProcessesUtilizationInfo_v1) {
      return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    }
    d->proc_last_seen.push_back(info->lastSeenTimeStamp);
    std::vector<nvmlProcessUtilizationInfo_v1_t> newer;
    for (const auto& s : d->proc_samples) {
      if (s.timeStamp > info->lastSeenTimeStamp) newer.push_back(s);
    }
    if (newer.empty()) return NVML_ERROR_NOT_FOUND;
    return FillList(newer, &info->processSamplesCount, info->procUtilArray);
  };
  api.process_utilization = nullptr;  // R550+ only: the versioned call above is preferred
  api.compute_processes = [](nvmlDevice_t h, unsigned* count, nvmlProcessInfo_t* out) {
    FakeDevice* d = Dev(h);
    if (d->lost) return NVML_ERROR_GPU_IS_LOST;
    ++d->compute_calls;
    return FillList(d->procs, count, out);
  };
  api.mps_compute_processes = [](nvmlDevice_t h, unsigned* count, nvmlProcessInfo_t* out) {
    FakeDevice* d = Dev(h);
    if (d->lost) return NVML_ERROR_GPU_IS_LOST;
    return FillList(d->mps_procs, count, out);
  };
  api.total_energy = [](nvmlDevice_t h, unsigned long long* e) {
    FakeDevice* d = Dev(h);
    if (d->lost) return NVML_ERROR_GPU_IS_LOST;
    ++d->energy_calls;
    if (!d->energy_supported) return NVML_ERROR_NOT_SUPPORTED;
    *e = d->energy_mj;
    return NVML_SUCCESS;
  };
  api.power_usage = [](nvmlDevice_t h, unsigned* p) {
    {
      std::unique_lock lock(g_fake->mu);
      g_fake->hanging = g_fake->hang_power;
      g_fake->cv.wait(lock, [] { return !g_fake->hang_power; });
      g_fake->hanging = false;
    }
    if (Dev(h)->lost) return NVML_ERROR_GPU_IS_LOST;
    *p = Dev(h)->power_mw;
    return NVML_SUCCESS;
  };
  api.mig_mode = [](nvmlDevice_t h, unsigned* current, unsigned* pending) {
    if (Dev(h)->lost) return NVML_ERROR_GPU_IS_LOST;
    *current = *pending = Dev(h)->mig_mode;
    return NVML_SUCCESS;
  };
  api.max_mig_device_count = [](nvmlDevice_t h, unsigned* c) {
    *c = static_cast<unsigned>(Dev(h)->mig_slots.size());
    return NVML_SUCCESS;
  };
  api.mig_device_handle_by_index = [](nvmlDevice_t h, unsigned i, nvmlDevice_t* m) {
    if (i >= Dev(h)->mig_slots.size()) return NVML_ERROR_INVALID_ARGUMENT;
    if (Dev(h)->mig_slots[i] == nullptr) return NVML_ERROR_NOT_FOUND;
    *m = Handle(Dev(h)->mig_slots[i]);
    return NVML_SUCCESS;
  };
  api.attributes = [](nvmlDevice_t h, nvmlDeviceAttributes_t* a) {
    if (!Dev(h)->attributes) return NVML_ERROR_NOT_SUPPORTED;
    *a = *Dev(h)->attributes;
    return NVML_SUCCESS;
  };
  api.gpu_instance_id = [](nvmlDevice_t h, unsigned* id) {
    *id = Dev(h)->gpu_instance_id;
    return NVML_SUCCESS;
  };
  return api;
}

// A GPM sample of `unit` into `sample`, as the fake's drivers take it.
nvmlReturn_t FillGpmSample(FakeDevice* unit, nvmlGpmSample_t sample) {
  static int sequence = 0;
  if (g_fake->gpm_live.count(sample) == 0) {
    ++g_fake->gpm_bad_samples;
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  ++unit->gpm_sample_calls;
  if (unit->gpm_sample_result != NVML_SUCCESS) return unit->gpm_sample_result;
  sample->device = unit;
  sample->sequence = ++sequence;
  sample->percent = unit->gpm_percent;
  sample->result = unit->gpm_metric_result;
  return NVML_SUCCESS;
}

// FakeApi plus GPM, as R520+ drivers export it.
NvmlApi FakeGpmApi() {
  NvmlApi api = FakeApi();
  api.gpm_query_device_support = [](nvmlDevice_t h, nvmlGpmSupport_t* support) {
    FakeDevice* d = Dev(h);
    ++d->gpm_query_calls;
    if (support->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (d->gpm_query_result != NVML_SUCCESS) return d->gpm_query_result;
    support->isSupportedDevice = d->gpm_supported;
    return NVML_SUCCESS;
  };
  api.gpm_sample_alloc = [](nvmlGpmSample_t* sample) {
    *sample = new nvmlGpmSample_st;
    g_fake->gpm_live.insert(*sample);
    ++g_fake->gpm_allocs;
    return NVML_SUCCESS;
  };
  api.gpm_sample_free = [](nvmlGpmSample_t sample) {
    if (g_fake->gpm_live.erase(sample) == 0) {
      ++g_fake->gpm_bad_frees;
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    delete sample;
    return NVML_SUCCESS;
  };
  api.gpm_sample_get = [](nvmlDevice_t h, nvmlGpmSample_t sample) {
    return FillGpmSample(Dev(h), sample);
  };
  api.gpm_mig_sample_get = [](nvmlDevice_t h, unsigned gi, nvmlGpmSample_t sample) {
    g_fake->gpm_mig_samples.emplace_back(Dev(h), gi);
    for (FakeDevice* m : Dev(h)->mig_slots) {
      if (m != nullptr && m->gpu_instance_id == gi) return FillGpmSample(m, sample);
    }
    return NVML_ERROR_NOT_FOUND;
  };
  api.gpm_metrics_get = [](nvmlGpmMetricsGet_t* get) {
    {
      std::unique_lock lock(g_fake->mu);
      g_fake->hanging = g_fake->hang_gpm;
      g_fake->cv.wait(lock, [] { return !g_fake->hang_gpm; });
      g_fake->hanging = false;
    }
    g_fake->gpm_requests.push_back(*get);
    if (get->version != NVML_GPM_METRICS_GET_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (g_fake->gpm_live.count(get->sample1) == 0 || g_fake->gpm_live.count(get->sample2) == 0) {
      ++g_fake->gpm_bad_samples;
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    // The later sample carries the means since the earlier one.
    const nvmlGpmSample_st& later = *get->sample2;
    for (unsigned i = 0; i < get->numMetrics; ++i) {
      nvmlGpmMetric_t& m = get->metrics[i];
      auto r = later.result.find(m.metricId);
      m.nvmlReturn = r == later.result.end() ? NVML_SUCCESS : r->second;
      auto p = later.percent.find(m.metricId);
      m.value = p == later.percent.end() ? 0 : p->second;
    }
    return NVML_SUCCESS;
  };
  return api;
}

void SetGpm(FakeDevice& d, double graphics, double sm, double occupancy, double tensor,
            double dram) {
  d.gpm_percent = {{NVML_GPM_METRIC_GRAPHICS_UTIL, graphics},
                   {NVML_GPM_METRIC_SM_UTIL, sm},
                   {NVML_GPM_METRIC_SM_OCCUPANCY, occupancy},
                   {NVML_GPM_METRIC_ANY_TENSOR_UTIL, tensor},
                   {NVML_GPM_METRIC_DRAM_BW_UTIL, dram}};
}

nvmlProcessInfo_t Proc(unsigned pid, Bytes used) {
  return {pid, static_cast<unsigned long long>(used), 0xFFFFFFFFu, 0xFFFFFFFFu, 0};
}

class NvmlSourceTest : public ::testing::Test {
 protected:
  void SetUp() override { g_fake = &fake_; }
  void TearDown() override {
    fake_.Release();
    source_.reset();
    g_fake = nullptr;
  }
  void Open(NvmlApi api = FakeApi(), Micros deadline_us = 2 * kSecond, int lost_retry = 10) {
    NvmlSourceOptions options;
    options.call_deadline_us = deadline_us;
    options.lost_retry_cycles = lost_retry;
    source_ = OpenNvmlSource(std::move(api), options, clock_);
  }
  sources::GpuReading ReadOk() {
    auto r = source_->Read();
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() ? std::move(*r) : sources::GpuReading{};
  }

  // The tests move time with now_ (both clocks) and step the wall clock alone with wall_step_.
  class TestClock final : public Clock {
   public:
    TestClock(const Micros& now, const Micros& wall_step) : now_(now), wall_step_(wall_step) {}
    ClockReading Now() const override { return {now_ + wall_step_, now_}; }

   private:
    const Micros& now_;
    const Micros& wall_step_;
  };

  Fake fake_;
  Micros now_ = kT0;
  Micros wall_step_ = 0;
  TestClock clock_{now_, wall_step_};
  std::unique_ptr<sources::GpuSource> source_;
};

const ProcessObservation* FindProcess(const sources::GpuReading& r, int pid) {
  for (const auto& p : r.processes) {
    if (p.pid == pid) return &p;
  }
  return nullptr;
}

const DeviceSignals* FindSignal(const sources::GpuReading& r, const std::string& uuid) {
  for (const auto& s : r.signals) {
    if (s.device.str() == uuid) return &s;
  }
  return nullptr;
}

bool HasFault(const sources::GpuReading& r, const std::string& code, const std::string& detail) {
  return std::any_of(r.faults.begin(), r.faults.end(), [&](const sources::SourceFault& f) {
    return f.source == "nvml" && f.code == code && f.detail == detail;
  });
}

TEST_F(NvmlSourceTest, FirstReadEstablishesBaselines) {
  auto& d = fake_.Add("GPU-aaaa");
  d.procs = {Proc(42, 4 * kGiB)};
  Open();
  // Counted at open: the agent's start-up line names the GPU before the first read.
  EXPECT_EQ(source_->Describe(), "nvml: driver 550.54.15, 1 GPU");
  auto r = ReadOk();
  EXPECT_EQ(r.start_us, kT0);
  EXPECT_EQ(r.end_us, kT0);
  ASSERT_EQ(r.gpus.size(), 1u);
  EXPECT_EQ(r.gpus[0].uuid.str(), "GPU-aaaa");
  EXPECT_EQ(r.gpus[0].model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r.gpus[0].memory_total_bytes, 80 * kGiB);
  EXPECT_TRUE(r.signals.empty());
  ASSERT_EQ(r.instant.size(), 1u);
  EXPECT_EQ(r.instant[0].power_mw, 300'000);
  EXPECT_EQ(r.instant[0].energy_total_mj, 1000);
  EXPECT_EQ(r.instant[0].utilization_percent, 50);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_FALSE(r.processes[0].sm_busy_us.has_value());
  EXPECT_TRUE(r.faults.empty());
  EXPECT_EQ(source_->Describe(), "nvml: driver 550.54.15, 1 GPU");
}

TEST_F(NvmlSourceTest, IntegratesSamplesExactlyAndPassesLastSeenTimeStamp) {
  auto& d = fake_.Add("GPU-aaaa");
  d.procs = {Proc(42, kGiB), Proc(43, kGiB)};
  Open();
  ReadOk();  // baseline at kT0, no samples yet
  // Six samples 1/6 s apart at 30%, the last exactly at the next read.
  for (int k = 1; k <= 6; ++k) {
    const unsigned long long ts = kT0 + (k * kSecond + 3) / 6;
    nvmlSample_t s{};
    s.timeStamp = ts;
    s.sampleValue.uiVal = 30;
    d.util_samples.push_back(s);
    d.proc_samples.push_back({ts, 42, 30, 0, 0, 0, 0, 0});
  }
  now_ = kT0 + kSecond;
  auto r = ReadOk();
  EXPECT_EQ(r.start_us, kT0);
  EXPECT_EQ(r.end_us, kT0 + kSecond);
  const auto* signal = FindSignal(r, "GPU-aaaa");
  ASSERT_NE(signal, nullptr);
  EXPECT_EQ(signal->busy_us, 300'000);
  EXPECT_EQ(signal->memory_used_bytes, 10 * kGiB);
  ASSERT_NE(FindProcess(r, 42), nullptr);
  EXPECT_EQ(FindProcess(r, 42)->sm_busy_us, 300'000);
  ASSERT_NE(FindProcess(r, 43), nullptr);
  EXPECT_EQ(FindProcess(r, 43)->sm_busy_us, 0);  // supported, no sample: zero, not unknown

  // The next second: the previous lastSeenTimeStamp is passed, so nothing is counted twice.
  for (int k = 1; k <= 6; ++k) {
    const unsigned long long ts = kT0 + kSecond + (k * kSecond + 3) / 6;
    nvmlSample_t s{};
    s.timeStamp = ts;
    s.sampleValue.uiVal = 60;
    d.util_samples.push_back(s);
    d.proc_samples.push_back({ts, 43, 60, 0, 0, 0, 0, 0});
  }
  now_ = kT0 + 2 * kSecond;
  r = ReadOk();
  EXPECT_EQ(FindSignal(r, "GPU-aaaa")->busy_us, 600'000);
  // Each window goes to the processes sampled within 100 ms of it (presence_split.h): the first
  // one, 60% x 1/6 s, to 43 (60%, at its end) and 42 (30%, at its start) by 2:1.
  EXPECT_EQ(FindProcess(r, 42)->sm_busy_us, 33'333);
  EXPECT_EQ(FindProcess(r, 43)->sm_busy_us, 566'667);
  ASSERT_EQ(d.proc_last_seen.size(), 3u);
  EXPECT_EQ(d.proc_last_seen[0], 0u);
  EXPECT_EQ(d.proc_last_seen[1], 0u);  // nothing seen during the baseline
  EXPECT_EQ(d.proc_last_seen[2], static_cast<unsigned long long>(kT0 + kSecond));
  ASSERT_EQ(d.sample_last_seen.size(), 3u);
  EXPECT_EQ(d.sample_last_seen[2], static_cast<unsigned long long>(kT0 + kSecond));
}

// One second of a GPU at 50% as the driver records it: a device and a process-42 sample half-way
// and at the end, stamped with the wall clock. `step` moves the wall clock between the two, so
// the first sample is on the old timeline and the second on the new one.
void HalfBusySecond(FakeDevice& d, Micros& now, Micros& wall_step, Micros step = 0) {
  for (int half = 0; half < 2; ++half) {
    if (half == 1) wall_step += step;
    now += kSecond / 2;
    const Micros wall = now + wall_step;
    const auto ts = static_cast<unsigned long long>(wall);
    nvmlSample_t s{};
    s.timeStamp = ts;
    s.sampleValue.uiVal = 50;
    d.util_samples.push_back(s);
    d.proc_samples.push_back({ts, 42, 50, 0, 0, 0, 0, 0});
  }
}

TEST_F(NvmlSourceTest, WallClockStepsAreReportedNeverMeteredAndLoseNoSample) {
  auto& d = fake_.Add("GPU-aaaa");
  d.procs = {Proc(42, kGiB)};
  Open();
  ReadOk();  // baseline
  constexpr Micros kHour = 3600 * kSecond;
  // Forward an hour, back to where it was, back an hour past it, forward 30 s (a VM resumed).
  for (Micros step :
       {Micros{0}, kHour, Micros{0}, -kHour, -kHour, Micros{0}, 30 * kSecond, Micros{0}}) {
    const Micros mono_before = now_;
    HalfBusySecond(d, now_, wall_step_, step);
    auto r = ReadOk();
    EXPECT_EQ(r.end_us, now_ + wall_step_) << step;
    EXPECT_EQ(r.end_us - r.start_us, now_ - mono_before) << step;  // a second, whatever the step
    EXPECT_EQ(r.wall_step_us, step);
    // Both samples count, each for half a second: the one from before the step too.
    ASSERT_NE(FindSignal(r, "GPU-aaaa"), nullptr);
    EXPECT_EQ(FindSignal(r, "GPU-aaaa")->busy_us, kSecond / 2) << step;
    ASSERT_NE(FindProcess(r, 42), nullptr);
    EXPECT_EQ(FindProcess(r, 42)->sm_busy_us, kSecond / 2) << step;
  }
  // A step within the tolerance is slewing as far as the source can tell: not reported, and the
  // interval is still the monotonic second.
  HalfBusySecond(d, now_, wall_step_, kSecond / 2);
  auto r = ReadOk();
  EXPECT_EQ(r.wall_step_us, 0);
  EXPECT_EQ(r.end_us - r.start_us, kSecond);
}

TEST_F(NvmlSourceTest, ShortBackwardStepNeverCountsASampleTwice) {
  // Back 3 s: for three seconds NVML returns, next to the new samples, those already counted on
  // the stretch the clock went back over (the fake, like a driver, keeps them all). The odd
  // 123 µs keeps new timestamps off the old ones, as a real clock's would be.
  auto& d = fake_.Add("GPU-aaaa");
  d.procs = {Proc(42, kGiB)};
  Open();
  ReadOk();
  for (Micros step : {Micros{0}, Micros{0}, Micros{0}, Micros{0}, -3 * kSecond - 123, Micros{0},
                      Micros{0}, Micros{0}, Micros{0}}) {
    HalfBusySecond(d, now_, wall_step_, step);
    auto r = ReadOk();
    EXPECT_EQ(r.wall_step_us, step);
    EXPECT_EQ(r.end_us - r.start_us, kSecond);
    EXPECT_EQ(FindSignal(r, "GPU-aaaa")->busy_us, kSecond / 2) << now_;
    EXPECT_EQ(FindProcess(r, 42)->sm_busy_us, kSecond / 2) << now_;
  }
}

TEST_F(NvmlSourceTest, SampleStampedAfterTheReadWaitsForTheNextRead) {
  auto& d = fake_.Add("GPU-aaaa");
  d.procs = {Proc(42, kGiB)};
  Open();
  ReadOk();
  HalfBusySecond(d, now_, wall_step_);
  // Taken while the read was under way (after its clock reading): the next interval's.
  nvmlSample_t late{};
  const Micros late_us = now_ + kSecond / 2;
  late.timeStamp = static_cast<unsigned long long>(late_us);
  late.sampleValue.uiVal = 100;
  d.util_samples.push_back(late);
  auto r = ReadOk();
  EXPECT_EQ(FindSignal(r, "GPU-aaaa")->busy_us, kSecond / 2);
  now_ += kSecond;
  r = ReadOk();
  EXPECT_EQ(FindSignal(r, "GPU-aaaa")->busy_us, kSecond / 2);  // 100% for the half second
}

TEST_F(NvmlSourceTest, FallsBackToUtilizationRatesWithoutSamples) {
  auto& d = fake_.Add("GPU-aaaa");
  d.samples_supported = false;
  d.util = 25;
  Open();
  auto first = ReadOk();
  EXPECT_TRUE(HasFault(first, "NOT_SUPPORTED", "nvmlDeviceGetSamples(GPU-aaaa)"));
  now_ += 2 * kSecond;
  auto r = ReadOk();
  EXPECT_EQ(FindSignal(r, "GPU-aaaa")->busy_us, 500'000);
  EXPECT_TRUE(r.faults.empty());  // NOT_SUPPORTED is reported once
  EXPECT_EQ(d.sample_last_seen.size(), 0u);
}

TEST_F(NvmlSourceTest, GrowsProcessBufferOnInsufficientSizeAndDeduplicates) {
  auto& d = fake_.Add("GPU-aaaa");
  for (unsigned pid = 1000; pid < 1040; ++pid) d.procs.push_back(Proc(pid, pid * kMiB));
  d.mps_procs = {Proc(1000, 2000 * kMiB), Proc(2000, kMiB)};
  Open();
  auto r = ReadOk();
  EXPECT_EQ(r.processes.size(), 41u);
  EXPECT_EQ(d.compute_calls, 2);  // 16 entries, INSUFFICIENT_SIZE (40), then 48
  ASSERT_NE(FindProcess(r, 1039), nullptr);
  EXPECT_EQ(FindProcess(r, 1039)->used_memory_bytes, 1039 * kMiB);
  EXPECT_EQ(FindProcess(r, 1000)->used_memory_bytes, 2000 * kMiB);
  EXPECT_EQ(FindProcess(r, 2000)->device.str(), "GPU-aaaa");
  now_ += kSecond;
  ReadOk();
  EXPECT_EQ(d.compute_calls, 3);  // the grown buffer is kept
}

TEST_F(NvmlSourceTest, EnergyDeltaAndCounterReset) {
  auto& d = fake_.Add("GPU-aaaa");
  Open();
  ReadOk();
  d.energy_mj = 1500;
  now_ += kSecond;
  EXPECT_EQ(FindSignal(ReadOk(), "GPU-aaaa")->energy_mj, 500);
  d.energy_mj = 200;  // driver reloaded: the counter restarted
  now_ += kSecond;
  EXPECT_FALSE(FindSignal(ReadOk(), "GPU-aaaa")->energy_mj.has_value());
  d.energy_mj = 450;
  now_ += kSecond;
  EXPECT_EQ(FindSignal(ReadOk(), "GPU-aaaa")->energy_mj, 250);
}

TEST_F(NvmlSourceTest, NotSupportedIsRememberedAndReportedOnce) {
  auto& d = fake_.Add("GPU-aaaa");
  d.energy_supported = false;
  d.proc_util_supported = false;
  d.procs = {Proc(7, kGiB)};
  Open();
  auto r = ReadOk();
  EXPECT_TRUE(HasFault(r, "NOT_SUPPORTED", "nvmlDeviceGetTotalEnergyConsumption(GPU-aaaa)"));
  for (int i = 0; i < 3; ++i) {
    now_ += kSecond;
    r = ReadOk();
    EXPECT_TRUE(r.faults.empty());
  }
  EXPECT_EQ(d.energy_calls, 1);
  EXPECT_FALSE(FindSignal(r, "GPU-aaaa")->energy_mj.has_value());
  EXPECT_FALSE(FindProcess(r, 7)->sm_busy_us.has_value());  // no per-process samples at all
}

TEST_F(NvmlSourceTest, GpuLostMidRunDisappearsAndComesBack) {
  fake_.Add("GPU-aaaa");
  auto& b = fake_.Add("GPU-bbbb");
  Open(FakeApi(), 2 * kSecond, /*lost_retry=*/3);
  ReadOk();
  b.lost = true;
  now_ += kSecond;
  auto r = ReadOk();
  ASSERT_EQ(r.gpus.size(), 1u);
  EXPECT_EQ(r.gpus[0].uuid.str(), "GPU-aaaa");
  EXPECT_EQ(FindSignal(r, "GPU-bbbb"), nullptr);
  EXPECT_TRUE(HasFault(r, "GPU_IS_LOST", "nvmlDeviceGetMemoryInfo(GPU-bbbb)"));
  now_ += kSecond;
  r = ReadOk();
  EXPECT_EQ(r.gpus.size(), 1u);
  EXPECT_TRUE(HasFault(r, "GPU_IS_LOST", "nvmlDeviceGetMemoryInfo(GPU-bbbb)"));
  b.lost = false;  // back after a reset; found by the periodic re-enumeration
  bool back = false;
  for (int i = 0; i < 4 && !back; ++i) {
    now_ += kSecond;
    r = ReadOk();
    back = r.gpus.size() == 2;
  }
  ASSERT_TRUE(back);
  EXPECT_EQ(FindSignal(r, "GPU-bbbb"), nullptr);  // fresh baseline: nothing integrated yet
  EXPECT_TRUE(r.faults.empty());
  now_ += kSecond;
  r = ReadOk();
  EXPECT_NE(FindSignal(r, "GPU-bbbb"), nullptr);
}

TEST_F(NvmlSourceTest, FailedDeviceCountGivesAnEmptyIntervalAndLosesNothing) {
  auto& d = fake_.Add("GPU-aaaa");
  Open();
  ReadOk();
  fake_.count_result = NVML_ERROR_UNKNOWN;
  d.energy_mj = 1100;
  now_ += kSecond;
  auto r = ReadOk();
  EXPECT_EQ(r.start_us, kT0);
  EXPECT_EQ(r.end_us, kT0);
  EXPECT_TRUE(r.gpus.empty());
  EXPECT_TRUE(HasFault(r, "UNKNOWN", "nvmlDeviceGetCount_v2()"));
  fake_.count_result = NVML_SUCCESS;
  d.energy_mj = 1400;
  now_ += kSecond;
  r = ReadOk();
  EXPECT_EQ(r.start_us, kT0);
  EXPECT_EQ(r.end_us, kT0 + 2 * kSecond);
  EXPECT_EQ(FindSignal(r, "GPU-aaaa")->energy_mj, 400);
}

TEST_F(NvmlSourceTest, MissingLibraryGivesNoGpuSource) {
  auto source = OpenNvmlSource("/nonexistent/libnvidia-ml.so.1", 2 * kSecond, clock_);
  EXPECT_EQ(source->Describe(), "no GPU: /nonexistent/libnvidia-ml.so.1 not found");
  auto r = source->Read();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->gpus.empty());
  ASSERT_EQ(r->faults.size(), 1u);
  EXPECT_EQ(r->faults[0].code, "LIBRARY_NOT_FOUND");
  // Its intervals are monotonic too: a wall step of an hour is reported, not measured.
  now_ += kSecond;
  wall_step_ = 3600 * kSecond;
  r = source->Read();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->end_us, kT0 + 3601 * kSecond);
  EXPECT_EQ(r->end_us - r->start_us, kSecond);
  EXPECT_EQ(r->wall_step_us, 3600 * kSecond);
  now_ += kSecond;
  r = source->Read();
  EXPECT_EQ(r->end_us - r->start_us, kSecond);
  EXPECT_EQ(r->wall_step_us, 0);
}

TEST_F(NvmlSourceTest, InitFailureGivesNoGpuSource) {
  fake_.init_result = NVML_ERROR_DRIVER_NOT_LOADED;
  Open();
  EXPECT_EQ(source_->Describe(), "no GPU: nvmlInit_v2: DRIVER_NOT_LOADED (fake error)");
  auto r = ReadOk();
  ASSERT_EQ(r.faults.size(), 1u);
  EXPECT_EQ(r.faults[0].code, "DRIVER_NOT_LOADED");
  EXPECT_EQ(r.faults[0].detail, "nvmlInit_v2()");
}

TEST_F(NvmlSourceTest, HungCallTimesOutAndRecovers) {
  auto& d = fake_.Add("GPU-aaaa");
  constexpr Micros kDeadline = 300'000;
  Open(FakeApi(), kDeadline);
  ReadOk();
  {
    std::lock_guard lock(fake_.mu);
    fake_.hang_power = true;
  }
  d.energy_mj = 1300;
  now_ += kSecond;
  auto started = std::chrono::steady_clock::now();
  auto r = source_->Read();
  auto elapsed = std::chrono::steady_clock::now() - started;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(r.error().message.find("TIMEOUT"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("nvmlDeviceGetPowerUsage(GPU-aaaa)"), std::string::npos);
  EXPECT_LT(elapsed, std::chrono::microseconds(kDeadline + 200'000));
  EXPECT_NE(source_->Describe().find("stale"), std::string::npos);

  // While the call hangs, Read() answers at once and issues nothing.
  started = std::chrono::steady_clock::now();
  r = source_->Read();
  EXPECT_FALSE(r.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(50));

  fake_.Release();
  std::optional<sources::GpuReading> ok;
  for (int i = 0; i < 100 && !ok; ++i) {
    now_ += kSecond;
    auto next = source_->Read();
    if (next.ok()) {
      ok = std::move(*next);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ASSERT_TRUE(ok.has_value());
  // The aborted read was not committed: the energy delta spans from the last good read.
  EXPECT_EQ(ok->start_us, kT0);
  EXPECT_EQ(FindSignal(*ok, "GPU-aaaa")->energy_mj, 300);
}

TEST_F(NvmlSourceTest, MigInstancesWithProfilesAndProcesses) {
  auto& gpu = fake_.Add("GPU-aaaa");
  gpu.mig_mode = NVML_DEVICE_MIG_ENABLE;
  fake_.migs.push_back(std::make_unique<FakeDevice>());
  FakeDevice& a = *fake_.migs.back();
  a.uuid = "MIG-1111";
  a.name = "NVIDIA H100 80GB HBM3 MIG 3g.40gb";
  a.memory = {40 * kGiB, 39 * kGiB, kGiB};
  a.attributes = nvmlDeviceAttributes_t{60, 3, 2, 0, 2, 0, 3, 3, 40448};
  a.procs = {Proc(77, kGiB)};
  fake_.migs.push_back(std::make_unique<FakeDevice>());
  FakeDevice& b = *fake_.migs.back();
  b.uuid = "MIG-2222";
  b.name = "NVIDIA H100 80GB HBM3";
  b.memory = {20 * kGiB, 20 * kGiB, 0};
  b.attributes = nvmlDeviceAttributes_t{32, 2, 1, 0, 1, 0, 2, 2, 20096};
  gpu.mig_slots = {&a, nullptr, &b};
  Open();
  ReadOk();
  now_ += kSecond;
  auto r = ReadOk();
  ASSERT_EQ(r.mig_instances.size(), 2u);
  EXPECT_EQ(r.mig_instances[0].uuid.str(), "MIG-1111");
  EXPECT_EQ(r.mig_instances[0].parent.str(), "GPU-aaaa");
  EXPECT_EQ(r.mig_instances[0].profile, "3g.40gb");
  EXPECT_EQ(r.mig_instances[0].compute_slices, 3);
  EXPECT_EQ(r.mig_instances[0].memory_total_bytes, 40 * kGiB);
  EXPECT_EQ(r.mig_instances[1].profile, "2g.20gb");  // from attributes
  EXPECT_EQ(r.mig_instances[1].compute_slices, 2);
  ASSERT_NE(FindProcess(r, 77), nullptr);
  EXPECT_EQ(FindProcess(r, 77)->device.str(), "MIG-1111");
  EXPECT_FALSE(FindProcess(r, 77)->sm_busy_us.has_value());
  EXPECT_EQ(FindSignal(r, "MIG-1111")->memory_used_bytes, kGiB);
  EXPECT_FALSE(FindSignal(r, "GPU-aaaa")->busy_us.has_value());
  EXPECT_EQ(gpu.compute_calls, 0);  // processes are read per MIG device
  EXPECT_TRUE(r.faults.empty());
}

// ---- GPM ----------------------------------------------------------------------------------

// A Hopper GPU not in MIG mode: the metrics between this read's sample and the previous read's
// become Activity integrals over the read's interval; busy time stays NVML's.
TEST_F(NvmlSourceTest, GpmGivesActivityIntegralsOverTheInterval) {
  auto& d = fake_.Add("GPU-aaaa");
  d.gpm_supported = 1;
  d.util = 80;  // no utilization samples: busy time from the rate
  SetGpm(d, 80, 50, 20, 30, 40.25);
  Open(FakeGpmApi());
  auto first = ReadOk();  // baseline: the first sample, no activity
  EXPECT_TRUE(first.signals.empty());
  EXPECT_TRUE(first.faults.empty());
  EXPECT_EQ(d.gpm_query_calls, 1);
  EXPECT_EQ(d.gpm_sample_calls, 1);
  now_ += kSecond;
  auto r = ReadOk();
  const DeviceSignals* sig = FindSignal(r, "GPU-aaaa");
  ASSERT_NE(sig, nullptr);
  ASSERT_TRUE(sig->activity.has_value());
  EXPECT_EQ(sig->activity_source, SignalSource::kGpm);
  EXPECT_EQ(*sig->activity, (Activity{500'000, 200'000, 300'000, 402'500}));
  EXPECT_EQ(sig->busy_us, 800'000);  // from utilization, not GPM
  EXPECT_EQ(sig->busy_source, SignalSource::kNvml);
  EXPECT_TRUE(r.faults.empty());
  // The request: version 1, the four activity metrics, the previous read's sample first.
  ASSERT_EQ(fake_.gpm_requests.size(), 1u);
  const nvmlGpmMetricsGet_t& q = fake_.gpm_requests[0];
  EXPECT_EQ(q.version, 1u);
  ASSERT_EQ(q.numMetrics, 4u);
  EXPECT_EQ(q.metrics[0].metricId, static_cast<unsigned>(NVML_GPM_METRIC_SM_UTIL));
  EXPECT_EQ(q.metrics[1].metricId, static_cast<unsigned>(NVML_GPM_METRIC_SM_OCCUPANCY));
  EXPECT_EQ(q.metrics[2].metricId, static_cast<unsigned>(NVML_GPM_METRIC_ANY_TENSOR_UTIL));
  EXPECT_EQ(q.metrics[3].metricId, static_cast<unsigned>(NVML_GPM_METRIC_DRAM_BW_UTIL));
  EXPECT_LT(q.sample1->sequence, q.sample2->sequence);
  // Two buffers, alternated: the next read measures from this read's sample, over 2 s.
  SetGpm(d, 0, 10, 5, 0, 100);
  now_ += 2 * kSecond;
  r = ReadOk();
  EXPECT_EQ(*FindSignal(r, "GPU-aaaa")->activity, (Activity{200'000, 100'000, 0, 2'000'000}));
  ASSERT_EQ(fake_.gpm_requests.size(), 2u);
  EXPECT_EQ(fake_.gpm_requests[1].sample1, fake_.gpm_requests[0].sample2);
  EXPECT_EQ(fake_.gpm_requests[1].sample2, fake_.gpm_requests[0].sample1);
  EXPECT_EQ(fake_.gpm_allocs, 2);
  EXPECT_EQ(fake_.gpm_bad_samples, 0);
  EXPECT_EQ(d.gpm_query_calls, 1);  // asked at discovery only
}

// MIG on Hopper: one GPM unit per GPU instance, sampled through the parent with the instance's
// id; the instance's busy time is GRAPHICS_UTIL, measured (kGpm).
TEST_F(NvmlSourceTest, GpmMeasuresEachMigInstance) {
  auto& gpu = fake_.Add("GPU-aaaa");
  gpu.mig_mode = NVML_DEVICE_MIG_ENABLE;
  gpu.gpm_supported = 1;
  fake_.migs.push_back(std::make_unique<FakeDevice>());
  FakeDevice& a = *fake_.migs.back();
  a.uuid = "MIG-1111";
  a.name = "NVIDIA H100 80GB HBM3 MIG 3g.40gb";
  a.gpu_instance_id = 2;
  SetGpm(a, 75, 40, 10, 20, 60);
  fake_.migs.push_back(std::make_unique<FakeDevice>());
  FakeDevice& b = *fake_.migs.back();
  b.uuid = "MIG-2222";
  b.name = "NVIDIA H100 80GB HBM3 MIG 2g.20gb";
  b.gpu_instance_id = 5;
  SetGpm(b, 0, 0, 0, 0, 0);
  gpu.mig_slots = {&a, nullptr, &b};
  Open(FakeGpmApi());
  ReadOk();
  now_ += kSecond;
  auto r = ReadOk();
  EXPECT_TRUE(r.faults.empty());
  const DeviceSignals* sa = FindSignal(r, "MIG-1111");
  ASSERT_NE(sa, nullptr);
  EXPECT_EQ(sa->busy_us, 750'000);
  EXPECT_EQ(sa->busy_source, SignalSource::kGpm);
  ASSERT_TRUE(sa->activity.has_value());
  EXPECT_EQ(sa->activity_source, SignalSource::kGpm);
  EXPECT_EQ(*sa->activity, (Activity{400'000, 100'000, 200'000, 600'000}));
  const DeviceSignals* sb = FindSignal(r, "MIG-2222");
  ASSERT_NE(sb, nullptr);
  EXPECT_EQ(sb->busy_us, 0);  // idle, and measured
  EXPECT_EQ(sb->busy_source, SignalSource::kGpm);
  EXPECT_EQ(*sb->activity, Activity{});
  // The GPU itself is not sampled in MIG mode: its signal has no busy time nor activity.
  const DeviceSignals* sg = FindSignal(r, "GPU-aaaa");
  ASSERT_NE(sg, nullptr);
  EXPECT_FALSE(sg->busy_us.has_value());
  EXPECT_FALSE(sg->activity.has_value());
  EXPECT_EQ(gpu.gpm_sample_calls, 0);
  // Sampled through the parent's handle with each instance's id, GRAPHICS_UTIL requested.
  ASSERT_EQ(fake_.gpm_mig_samples.size(), 4u);
  EXPECT_EQ(fake_.gpm_mig_samples[0], std::make_pair(&gpu, 2u));
  EXPECT_EQ(fake_.gpm_mig_samples[1], std::make_pair(&gpu, 5u));
  ASSERT_FALSE(fake_.gpm_requests.empty());
  EXPECT_EQ(fake_.gpm_requests[0].numMetrics, 5u);
  EXPECT_EQ(fake_.gpm_requests[0].metrics[4].metricId,
            static_cast<unsigned>(NVML_GPM_METRIC_GRAPHICS_UTIL));
}

// Pre-Hopper: isSupportedDevice 0 (or NOT_SUPPORTED) means no GPM calls and no activity; a
// driver without the symbols is silently the same.
TEST_F(NvmlSourceTest, NoGpmBeforeHopper) {
  auto& a = fake_.Add("GPU-aaaa");
  a.name = "NVIDIA A100-SXM4-80GB";
  a.gpm_supported = 0;
  auto& b = fake_.Add("GPU-bbbb");
  b.name = "NVIDIA A100-SXM4-80GB";
  b.gpm_query_result = NVML_ERROR_NOT_SUPPORTED;
  Open(FakeGpmApi());
  auto first = ReadOk();
  ASSERT_EQ(first.faults.size(), 1u);  // NOT_SUPPORTED is reported, once; isSupported 0 is not
  EXPECT_TRUE(HasFault(first, "NOT_SUPPORTED", "nvmlGpmQueryDeviceSupport(GPU-bbbb)"));
  for (int i = 0; i < 3; ++i) {
    now_ += kSecond;
    auto r = ReadOk();
    EXPECT_TRUE(r.faults.empty());
    EXPECT_FALSE(FindSignal(r, "GPU-aaaa")->activity.has_value());
    EXPECT_EQ(FindSignal(r, "GPU-aaaa")->activity_source, SignalSource::kNone);
    EXPECT_FALSE(FindSignal(r, "GPU-bbbb")->activity.has_value());
  }
  EXPECT_EQ(fake_.gpm_allocs, 0);
  EXPECT_EQ(a.gpm_sample_calls + b.gpm_sample_calls, 0);
  EXPECT_EQ(a.gpm_query_calls, 1);
  EXPECT_EQ(b.gpm_query_calls, 1);

  // Re-discovery (here: a GPU appeared) asks again.
  auto& c = fake_.Add("GPU-cccc");
  c.gpm_supported = 1;
  now_ += kSecond;
  ReadOk();
  EXPECT_EQ(a.gpm_query_calls, 2);
  EXPECT_EQ(c.gpm_query_calls, 1);
  EXPECT_EQ(c.gpm_sample_calls, 1);
}

TEST_F(NvmlSourceTest, NoGpmSymbolsNoGpmNoFault) {
  auto& d = fake_.Add("GPU-aaaa");
  d.gpm_supported = 1;
  Open(FakeApi());
  ReadOk();
  now_ += kSecond;
  auto r = ReadOk();
  EXPECT_TRUE(r.faults.empty());
  EXPECT_FALSE(FindSignal(r, "GPU-aaaa")->activity.has_value());
  EXPECT_EQ(d.gpm_query_calls, 0);
}

// A metric that fails takes the unit's activity for that read (a partial one would read as
// zeros) and is reported; a failed sample starts the unit over.
TEST_F(NvmlSourceTest, GpmMetricErrorsAndSampleErrors) {
  auto& d = fake_.Add("GPU-aaaa");
  d.gpm_supported = 1;
  SetGpm(d, 0, 50, 20, 30, 40);
  Open(FakeGpmApi());
  ReadOk();
  d.gpm_metric_result[NVML_GPM_METRIC_DRAM_BW_UTIL] = NVML_ERROR_UNKNOWN;
  now_ += kSecond;
  auto r = ReadOk();
  EXPECT_FALSE(FindSignal(r, "GPU-aaaa")->activity.has_value());
  EXPECT_TRUE(HasFault(r, "UNKNOWN", "nvmlGpmMetricsGet(GPU-aaaa DRAM_BW_UTIL)"));
  d.gpm_metric_result.clear();
  now_ += kSecond;
  r = ReadOk();
  ASSERT_TRUE(FindSignal(r, "GPU-aaaa")->activity.has_value());
  EXPECT_EQ(FindSignal(r, "GPU-aaaa")->activity->dram_active_us, 400'000);
  EXPECT_TRUE(r.faults.empty());

  // NOT_SUPPORTED for one metric: reported once, never activity.
  d.gpm_metric_result[NVML_GPM_METRIC_SM_OCCUPANCY] = NVML_ERROR_NOT_SUPPORTED;
  now_ += kSecond;
  r = ReadOk();
  EXPECT_TRUE(HasFault(r, "NOT_SUPPORTED", "nvmlGpmMetricsGet(GPU-aaaa SM_OCCUPANCY)"));
  now_ += kSecond;
  r = ReadOk();
  EXPECT_TRUE(r.faults.empty());
  EXPECT_FALSE(FindSignal(r, "GPU-aaaa")->activity.has_value());
  d.gpm_metric_result.clear();

  // The sample fails: no activity, and the next read only takes a fresh first sample.
  d.gpm_sample_result = NVML_ERROR_UNKNOWN;
  now_ += kSecond;
  r = ReadOk();
  EXPECT_TRUE(HasFault(r, "UNKNOWN", "nvmlGpmSampleGet(GPU-aaaa)"));
  EXPECT_FALSE(FindSignal(r, "GPU-aaaa")->activity.has_value());
  d.gpm_sample_result = NVML_SUCCESS;
  now_ += kSecond;
  r = ReadOk();
  EXPECT_FALSE(FindSignal(r, "GPU-aaaa")->activity.has_value());
  now_ += kSecond;
  r = ReadOk();
  EXPECT_TRUE(FindSignal(r, "GPU-aaaa")->activity.has_value());
  EXPECT_EQ(fake_.gpm_bad_samples, 0);
}

// Sample buffers: two per unit, kept across reads, a vanished instance's freed after the read
// that no longer sees it, all freed before nvmlShutdown on teardown.
TEST_F(NvmlSourceTest, GpmSamplesFreedWhenUnitsVanishAndOnTeardown) {
  auto& gpu = fake_.Add("GPU-aaaa");
  gpu.mig_mode = NVML_DEVICE_MIG_ENABLE;
  gpu.gpm_supported = 1;
  fake_.migs.push_back(std::make_unique<FakeDevice>());
  FakeDevice& a = *fake_.migs.back();
  a.uuid = "MIG-1111";
  a.gpu_instance_id = 1;
  fake_.migs.push_back(std::make_unique<FakeDevice>());
  FakeDevice& b = *fake_.migs.back();
  b.uuid = "MIG-2222";
  b.gpu_instance_id = 2;
  gpu.mig_slots = {&a, &b};
  Open(FakeGpmApi());
  for (int i = 0; i < 5; ++i) {
    ReadOk();
    now_ += kSecond;
  }
  EXPECT_EQ(fake_.gpm_allocs, 4);  // no new buffers per cycle
  EXPECT_EQ(fake_.gpm_live.size(), 4u);
  gpu.mig_slots = {&a, nullptr};  // MIG-2222 destroyed
  auto r = ReadOk();
  EXPECT_EQ(FindSignal(r, "MIG-2222"), nullptr);
  EXPECT_EQ(fake_.gpm_live.size(), 2u);
  EXPECT_TRUE(r.faults.empty());
  // MIG mode off: the instance's unit goes, the GPU becomes one.
  gpu.mig_mode = NVML_DEVICE_MIG_DISABLE;
  now_ += kSecond;
  ReadOk();
  EXPECT_EQ(fake_.gpm_live.size(), 2u);
  EXPECT_EQ(gpu.gpm_sample_calls, 1);
  source_.reset();
  EXPECT_TRUE(fake_.gpm_live.empty());
  EXPECT_EQ(fake_.gpm_bad_frees, 0);
  EXPECT_EQ(fake_.gpm_bad_samples, 0);
}

TEST_F(NvmlSourceTest, GpmSamplesOfALostGpuAreFreed) {
  auto& d = fake_.Add("GPU-aaaa");
  d.gpm_supported = 1;
  Open(FakeGpmApi());
  ReadOk();
  now_ += kSecond;
  ReadOk();
  EXPECT_EQ(fake_.gpm_live.size(), 2u);
  d.lost = true;
  now_ += kSecond;
  auto r = ReadOk();
  EXPECT_TRUE(r.gpus.empty());
  EXPECT_TRUE(fake_.gpm_live.empty());
  EXPECT_EQ(fake_.gpm_bad_frees, 0);
}

// A hung GPM call blocks no longer than the deadline, like any other; nothing is lost or
// freed twice once it returns.
TEST_F(NvmlSourceTest, HungGpmCallTimesOut) {
  auto& d = fake_.Add("GPU-aaaa");
  d.gpm_supported = 1;
  SetGpm(d, 0, 50, 20, 30, 40);
  constexpr Micros kDeadline = 300'000;
  Open(FakeGpmApi(), kDeadline);
  ReadOk();
  {
    std::lock_guard lock(fake_.mu);
    fake_.hang_gpm = true;
  }
  now_ += kSecond;
  auto started = std::chrono::steady_clock::now();
  auto r = source_->Read();
  EXPECT_LT(std::chrono::steady_clock::now() - started,
            std::chrono::microseconds(kDeadline + 200'000));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("nvmlGpmMetricsGet(GPU-aaaa)"), std::string::npos)
      << r.error().message;
  fake_.Release();
  std::optional<sources::GpuReading> ok;
  for (int i = 0; i < 100 && !ok; ++i) {
    now_ += kSecond;
    auto next = source_->Read();
    if (next.ok()) {
      ok = std::move(*next);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ASSERT_TRUE(ok.has_value());
  // Measured from the last committed sample over the whole interval since the last good read.
  ASSERT_TRUE(FindSignal(*ok, "GPU-aaaa")->activity.has_value());
  const Micros interval = ok->end_us - ok->start_us;
  EXPECT_EQ(FindSignal(*ok, "GPU-aaaa")->activity->sm_active_us, interval / 2);
  source_.reset();
  EXPECT_TRUE(fake_.gpm_live.empty());
  EXPECT_EQ(fake_.gpm_bad_frees, 0);
  EXPECT_EQ(fake_.gpm_bad_samples, 0);
}

TEST(ParseMigProfile, TrailingToken) {
  EXPECT_EQ(ParseMigProfile("NVIDIA H100 80GB HBM3 MIG 3g.40gb"), "3g.40gb");
  EXPECT_EQ(ParseMigProfile("NVIDIA H200 MIG 1g.18gb+me"), "1g.18gb+me");
  EXPECT_EQ(ParseMigProfile("NVIDIA A100-SXM4-40GB MIG 1c.3g.20gb"), "1c.3g.20gb");
  EXPECT_EQ(ParseMigProfile("NVIDIA H100 80GB HBM3"), "");
  EXPECT_EQ(ParseMigProfile("MIG 3g.40"), "");
  EXPECT_EQ(ProfileSlices("3g.40gb"), 3);
  EXPECT_EQ(ProfileSlices("1c.7g.80gb"), 7);
  EXPECT_EQ(ProfileSlices("junk"), 0);
}

TEST(ParseProcessInfos, DetectsThe24ByteLayoutOfOlderDrivers) {
  std::vector<nvmlProcessInfo_t> buffer(4);
  std::memset(static_cast<void*>(buffer.data()), 0xA5, buffer.size() * sizeof(buffer[0]));
  nvmlProcessInfo_v2_t old[2] = {{11, 100, 0xFFFFFFFFu, 0xFFFFFFFFu},
                                 {12, NVML_VALUE_NOT_AVAILABLE, 0xFFFFFFFFu, 0xFFFFFFFFu}};
  std::memcpy(static_cast<void*>(buffer.data()), old, sizeof(old));
  auto entries = ParseProcessInfos(buffer.data(), buffer.size(), 2, 0xA5);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[1].pid, 12u);
  EXPECT_EQ(entries[0].used_memory_bytes, 100);
  EXPECT_EQ(entries[1].used_memory_bytes, 0);

  std::memset(static_cast<void*>(buffer.data()), 0xA5, buffer.size() * sizeof(buffer[0]));
  buffer[0] = Proc(21, 5);
  buffer[1] = Proc(22, 6);
  entries = ParseProcessInfos(buffer.data(), buffer.size(), 2, 0xA5);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[1].pid, 22u);
  EXPECT_EQ(entries[1].used_memory_bytes, 6);
}

TEST(IntegrateSamples, FirstSampleUsesGapToPreviousReadAndPeriodsAreCapped) {
  SampleCursor cursor;
  auto out = IntegrateSamples({{kT0 + 500'000, 0, 100}}, cursor, kT0, kSecond);
  EXPECT_EQ(out[0], 100 * 500'000);
  // A gap longer than the read interval counts for one interval at most.
  out = IntegrateSamples({{kT0 + 10 * kSecond, 0, 50}, {kT0 + 10 * kSecond, 7, 20}}, cursor,
                         kT0 + 9 * kSecond, kSecond);
  EXPECT_EQ(out[0], 50 * kSecond);
  EXPECT_EQ(out[7], 20 * kSecond);
  EXPECT_EQ(cursor.last_seen_ts, static_cast<unsigned long long>(kT0 + 10 * kSecond));
}

class FakeLibrary : public DynamicLibrary {
 public:
  explicit FakeLibrary(std::map<std::string, void*> symbols) : symbols_(std::move(symbols)) {}
  void* Symbol(const char* name) override {
    auto it = symbols_.find(name);
    return it == symbols_.end() ? nullptr : it->second;
  }
  std::string Path() const override { return "fake.so"; }

 private:
  std::map<std::string, void*> symbols_;
};

void* Sym(nvmlReturn_t (*fn)()) { return reinterpret_cast<void*>(fn); }

TEST(LoadNvml, RequiredSymbolsAndOptionalOnes) {
  nvmlReturn_t (*ok)() = [] { return NVML_SUCCESS; };
  std::map<std::string, void*> symbols;
  for (const char* name :
       {"nvmlInit_v2", "nvmlShutdown", "nvmlDeviceGetCount_v2", "nvmlDeviceGetHandleByIndex_v2",
        "nvmlDeviceGetUUID", "nvmlDeviceGetName"}) {
    symbols[name] = Sym(ok);
  }
  auto missing = LoadNvml(std::make_shared<FakeLibrary>(symbols));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("nvmlDeviceGetMemoryInfo"), std::string::npos);
  symbols["nvmlDeviceGetMemoryInfo"] = Sym(ok);
  symbols["nvmlDeviceGetPowerUsage"] = Sym(ok);
  auto api = LoadNvml(std::make_shared<FakeLibrary>(symbols));
  ASSERT_TRUE(api.ok()) << api.error().message;
  EXPECT_NE(api->power_usage, nullptr);
  EXPECT_EQ(api->samples, nullptr);
  EXPECT_EQ(api->gpm_metrics_get, nullptr);  // a pre-R520 driver: GPM stays off
  EXPECT_NE(api->library, nullptr);
}

TEST(ErrorName, NamesNvmlCodes) {
  EXPECT_EQ(ErrorName(NVML_ERROR_GPU_IS_LOST), "GPU_IS_LOST");
  EXPECT_EQ(ErrorName(NVML_ERROR_INSUFFICIENT_SIZE), "INSUFFICIENT_SIZE");
  EXPECT_EQ(ErrorName(static_cast<nvmlReturn_t>(77)), "ERROR_77");
}

TEST(Watchdog, RefusesNewWorkWhileACallHangs) {
  auto mu = std::make_shared<std::mutex>();
  auto cv = std::make_shared<std::condition_variable>();
  auto release = std::make_shared<bool>(false);
  Watchdog watchdog(100'000, nullptr);
  EXPECT_EQ(watchdog.Run("quick", [] {}), Watchdog::Outcome::kDone);
  EXPECT_EQ(watchdog.Run("hang",
                         [=] {
                           std::unique_lock lock(*mu);
                           cv->wait(lock, [&] { return *release; });
                         }),
            Watchdog::Outcome::kTimedOut);
  EXPECT_TRUE(watchdog.Hung());
  EXPECT_EQ(watchdog.HungCall(), "hang");
  bool ran = false;
  EXPECT_EQ(watchdog.Run("next", [&] { ran = true; }), Watchdog::Outcome::kStillHung);
  EXPECT_FALSE(ran);
  {
    std::lock_guard lock(*mu);
    *release = true;
  }
  cv->notify_all();
  for (int i = 0; i < 200 && watchdog.Hung(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(watchdog.Run("next", [&] { ran = true; }), Watchdog::Outcome::kDone);
  EXPECT_TRUE(ran);
}

}  // namespace
}  // namespace gpuledger::nvml
