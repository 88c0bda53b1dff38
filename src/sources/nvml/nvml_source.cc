#include "sources/nvml/nvml_source.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <utility>

#include "sources/nvml/watchdog.h"

namespace gpuledger::nvml {
namespace {

using sources::GpuReading;
using sources::SourceFault;

constexpr const char* kSource = "nvml";
constexpr unsigned char kSentinel = 0xA5;
constexpr unsigned kGrowMargin = 8;  // entries added to the count NVML asks for
constexpr int kMaxGrowAttempts = 4;  // INSUFFICIENT_SIZE retries per call
constexpr unsigned kMaxEntries = 1u << 16;

SourceFault Fault(std::string code, std::string detail) {
  return {kSource, std::move(code), std::move(detail)};
}

template <std::size_t N>
std::string CString(const std::array<char, N>& buffer) {
  return std::string(buffer.data(), strnlen(buffer.data(), N));
}

Micros Clamp(Micros v, Micros hi) { return std::clamp<Micros>(v, 0, std::max<Micros>(hi, 0)); }

// Percent-µs to µs, rounded half up, clamped to the interval.
GpuMicros PercentMicrosToMicros(std::int64_t percent_us, Micros interval_us) {
  return Clamp((percent_us + 50) / 100, interval_us);
}

double SampleValue(nvmlValueType_t type, const nvmlValue_t& v) {
  switch (type) {
    case NVML_VALUE_TYPE_DOUBLE:
      return v.dVal;
    case NVML_VALUE_TYPE_UNSIGNED_INT:
      return v.uiVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
      return static_cast<double>(v.ulVal);
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
      return static_cast<double>(v.ullVal);
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
      return static_cast<double>(v.sllVal);
    case NVML_VALUE_TYPE_SIGNED_INT:
      return v.siVal;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT:
      return v.usVal;
  }
  return v.uiVal;
}

// GPM's key for a physical GPU not in MIG mode (no GPU instance has this id; NVML uses it for
// "no MIG" in nvmlProcessInfo_t).
constexpr unsigned kGpmWholeGpu = 0xFFFFFFFFu;

// One GPM unit (a GPU, or a MIG GPU instance): the sample of the previous read and the buffer
// this read samples into. A read writes only `current` and swaps the two when it is committed
// with the read, so a read aborted by a timeout leaves `previous` as it was.
struct GpmUnit {
  nvmlGpmSample_t previous = nullptr;
  nvmlGpmSample_t current = nullptr;
  bool has_previous = false;  // `previous` holds a sample
};

// The GPM metrics of one unit over one interval (unset: not measured this read).
struct GpmReadout {
  std::optional<Activity> activity;      // relative to the unit
  std::optional<GpuMicros> graphics_us;  // GRAPHICS_UTIL x interval (MIG units only)
};

// What the source remembers about one physical GPU between reads.
struct DeviceState {
  nvmlDevice_t handle = nullptr;
  std::string uuid;
  std::string name;
  bool fresh = true;  // no baseline yet: this read establishes one and integrates nothing
  // Calls answered NOT_SUPPORTED (or absent from the library): not retried, reported once.
  // Keyed "<function>" for the GPU and "<function>/mig" for its MIG devices.
  std::set<std::string> unsupported;
  std::optional<unsigned long long> energy_mj;  // counter at the previous read
  SampleCursor util_cursor;                     // nvmlDeviceGetSamples(GPU_UTILIZATION)
  bool util_samples_seen = false;
  SampleCursor process_cursor;       // per-process utilization
  bool legacy_process_util = false;  // nvmlDeviceGetProcessUtilization instead
  unsigned sample_capacity = 128;
  unsigned process_sample_capacity = 32;
  unsigned process_capacity = 16;
  std::string lost_call;  // set during a read when GPU_IS_LOST was seen
  // GPM (docs/nvml.md): asked at discovery; units by GPU instance id (kGpmWholeGpu for the GPU
  // itself when not in MIG mode). The sample buffers belong to the source's pool; a unit only
  // names the two it alternates between.
  bool gpm = false;
  std::map<unsigned, GpmUnit> gpm_units;
  std::set<unsigned> gpm_seen;  // units sampled in this read
};

struct State {
  bool have_baseline = false;  // a read has completed
  ClockReading previous_read;  // when it completed
  bool enumerated = false;
  unsigned count = 0;
  std::vector<DeviceState> devices;
  std::map<std::string, std::string> lost;  // uuid -> the call that returned GPU_IS_LOST
  int reads_since_enumeration = 0;
};

// One Read(): a copy of the state that is committed only when the read completes, so a read
// aborted by a timeout loses no sample and counts nothing twice.
struct Work {
  State next;
  GpuReading reading;
  Micros interval_us = 0;
  Micros max_period_us = 0;  // longest period one sample may stand for
  Micros previous_read_us = 0;
  WallStep step;  // the wall clock's step since the previous read, if any
  bool timed_out = false;
  std::string timed_out_call;
};

class NvmlGpuSource final : public sources::GpuSource {
 public:
  NvmlGpuSource(NvmlApi api, NvmlSourceOptions options, const Clock& clock,
                std::unique_ptr<Watchdog> watchdog, std::string driver, unsigned count)
      : api_(std::move(api)),
        options_(options),
        clock_(clock),
        watchdog_(std::move(watchdog)),
        driver_(std::move(driver)),
        described_count_(count) {}

  ~NvmlGpuSource() override {
    // A hung call may be using a sample buffer or the library: then nothing is freed (the
    // process is going away, and a late free could race the hung call).
    if (!watchdog_->Hung()) {
      FreeGpmSamples({});
    }
    if (!watchdog_->Hung()) {
      auto shutdown = api_.shutdown;
      (void)watchdog_->Run("nvmlShutdown()", [shutdown] { shutdown(); });
    }
  }

  Result<GpuReading> Read() override;

  std::string Describe() const override {
    std::string s = "nvml: driver " + (driver_.empty() ? std::string("unknown") : driver_) + ", " +
                    std::to_string(described_count_) + " GPUs";
    if (watchdog_->Hung()) {
      s += " (stale: " + watchdog_->HungCall() + " has not returned)";
    }
    return s;
  }

 private:
  // Runs fn(box) on the watchdog's worker with a heap copy of `box` (a hung call keeps writing
  // into that copy, never into this stack frame) and copies the result back when it finished.
  template <typename Box, typename Fn>
  nvmlReturn_t Call(Work& w, std::string name, Box& box, Fn fn) {
    if (w.timed_out) {
      return NVML_ERROR_TIMEOUT;
    }
    auto shared =
        std::make_shared<std::pair<Box, nvmlReturn_t>>(std::move(box), NVML_ERROR_UNKNOWN);
    auto outcome = watchdog_->Run(name, [shared, fn] { shared->second = fn(shared->first); });
    if (outcome != Watchdog::Outcome::kDone) {
      w.timed_out = true;
      w.timed_out_call = std::move(name);
      return NVML_ERROR_TIMEOUT;
    }
    box = std::move(shared->first);
    return shared->second;
  }

  static std::string Key(const char* fn, bool mig) { return mig ? std::string(fn) + "/mig" : fn; }

  // Records a failed call on device `d` (subject: the GPU or MIG uuid the call was about).
  void Note(Work& w, DeviceState& d, const char* fn, bool mig, const std::string& subject,
            nvmlReturn_t ret) {
    if (w.timed_out) {
      return;
    }
    std::string detail = std::string(fn) + "(" + subject + ")";
    if (ret == NVML_ERROR_GPU_IS_LOST) {
      if (d.lost_call.empty()) {
        d.lost_call = std::move(detail);  // reported by Read() every cycle while lost
      }
      return;
    }
    if (ret == NVML_ERROR_NOT_SUPPORTED || ret == NVML_ERROR_FUNCTION_NOT_FOUND) {
      if (d.unsupported.insert(Key(fn, mig)).second) {
        w.reading.faults.push_back(Fault(ErrorName(ret), std::move(detail)));
      }
      return;
    }
    w.reading.faults.push_back(Fault(ErrorName(ret), std::move(detail)));
  }

  bool Supported(const DeviceState& d, const char* fn, bool mig) const {
    return d.unsupported.count(Key(fn, mig)) == 0;
  }

  // An optional single-value getter: null entry or remembered NOT_SUPPORTED -> nullopt without a
  // call. `fn` is nvmlReturn_t(T&).
  template <typename T, typename Fn>
  std::optional<T> Get(Work& w, DeviceState& d, const char* fn_name, bool present, bool mig,
                       const std::string& subject, Fn fn) {
    if (!Supported(d, fn_name, mig)) {
      return std::nullopt;
    }
    if (!present) {
      Note(w, d, fn_name, mig, subject, NVML_ERROR_FUNCTION_NOT_FOUND);
      return std::nullopt;
    }
    T value{};
    nvmlReturn_t ret = Call(w, std::string(fn_name) + "(" + subject + ")", value, fn);
    if (ret != NVML_SUCCESS) {
      Note(w, d, fn_name, mig, subject, ret);
      return std::nullopt;
    }
    return value;
  }

  void Enumerate(Work& w, unsigned count);
  void ReadDevice(Work& w, DeviceState& d);
  std::optional<std::vector<UtilSample>> ReadUtilSamples(Work& w, DeviceState& d);
  std::optional<std::vector<UtilSample>> ReadProcessSamples(Work& w, DeviceState& d);
  // Appends the compute and MPS processes of `handle`, deduplicated by PID; failures are noted.
  void ListProcesses(Work& w, DeviceState& d, nvmlDevice_t handle, const std::string& subject,
                     bool mig, std::vector<ProcessEntry>& out);
  void ReadMig(Work& w, DeviceState& d, bool baseline, std::vector<MigInstance>& migs,
               std::vector<DeviceSignals>& signals, std::vector<ProcessObservation>& processes);
  // nvmlGpmQueryDeviceSupport at discovery: sets d.gpm.
  void QueryGpm(Work& w, DeviceState& d);
  // Samples one GPM unit of `d` and, with the previous read's sample, computes its metrics.
  GpmReadout ReadGpm(Work& w, DeviceState& d, unsigned gpu_instance_id, const std::string& subject);
  // Frees the pool's sample buffers that no unit of `keep` names (all of them for an empty
  // state); failures become faults of `faults` when given.
  void FreeGpmSamples(const State& keep, std::vector<SourceFault>* faults = nullptr);

  NvmlApi api_;
  NvmlSourceOptions options_;
  const Clock& clock_;
  std::unique_ptr<Watchdog> watchdog_;
  std::string driver_;
  unsigned described_count_ = 0;
  State state_;
  // Every GPM sample buffer allocated and not yet freed, committed or not: a read that aborts
  // may have allocated some; FreeGpmSamples frees whatever the committed state does not name.
  std::set<nvmlGpmSample_t> gpm_pool_;
};

Result<GpuReading> NvmlGpuSource::Read() {
  if (watchdog_->Hung()) {
    return Unavailable("nvml stale: TIMEOUT: " + watchdog_->HungCall() +
                       " has not returned; no NVML call is made until it does");
  }
  const ClockReading now = clock_.Now();
  Work w{state_, {}, 0, 0, 0, {}, false, {}};
  const bool first = !state_.have_baseline;
  // The interval's length is monotonic time; its end is the wall time NVML stamps samples with.
  const ClockInterval interval = first ? ClockInterval{now.wall_us, now.wall_us, 0}
                                       : IntervalBetween(state_.previous_read, now);
  w.reading.start_us = interval.start_us;
  w.reading.end_us = interval.end_us;
  w.reading.wall_step_us = interval.wall_step_us;
  w.interval_us = interval.duration_us();
  w.max_period_us = std::min(w.interval_us, options_.max_sample_period_us);
  w.previous_read_us = w.reading.start_us;
  w.step = {interval.wall_step_us, state_.previous_read.wall_us, now.wall_us};
  if (first) {
    for (auto& d : w.next.devices) d.fresh = true;
  } else if (w.step.step_us != 0) {
    // Re-anchor every sample stream on the new timeline (WallStep in nvml_source.h). Committed
    // with the read, like everything else, so a read that times out re-anchors on the next try.
    for (auto& d : w.next.devices) {
      ShiftCursor(d.util_cursor, w.step.step_us);
      ShiftCursor(d.process_cursor, w.step.step_us);
    }
  }

  unsigned count = 0;
  auto device_count = api_.device_count;
  nvmlReturn_t ret = Call(w, "nvmlDeviceGetCount_v2()", count,
                          [device_count](unsigned& c) { return device_count(&c); });
  if (w.timed_out) {
    return Unavailable("nvml stale: TIMEOUT: " + w.timed_out_call + " did not return within " +
                       std::to_string(watchdog_->deadline_us() / 1000) + " ms");
  }
  if (ret != NVML_SUCCESS) {
    // Nothing is committed: an empty interval carries the fault and the next good reading
    // covers the whole gap from the last good one.
    GpuReading empty;
    empty.start_us = empty.end_us = w.reading.start_us;
    empty.faults.push_back(Fault(ErrorName(ret), "nvmlDeviceGetCount_v2()"));
    return empty;
  }

  State& s = w.next;
  ++s.reads_since_enumeration;
  if (!s.enumerated || count != s.count ||
      (!s.lost.empty() && s.reads_since_enumeration >= options_.lost_retry_cycles)) {
    Enumerate(w, count);
  }
  s.count = count;

  for (auto& d : s.devices) {
    d.lost_call.clear();
    ReadDevice(w, d);
  }
  // Lost devices disappear from the reading; they are reported every cycle until a
  // re-enumeration finds them healthy again.
  for (auto it = s.devices.begin(); it != s.devices.end();) {
    if (!it->lost_call.empty()) {
      s.lost[it->uuid] = it->lost_call;
      it = s.devices.erase(it);
    } else {
      it->fresh = false;
      ++it;
    }
  }
  for (const auto& [uuid, call] : s.lost) {
    w.reading.faults.push_back(Fault("GPU_IS_LOST", call));
  }
  if (w.timed_out) {
    return Unavailable("nvml stale: TIMEOUT: " + w.timed_out_call + " did not return within " +
                       std::to_string(watchdog_->deadline_us() / 1000) + " ms");
  }
  s.have_baseline = true;
  s.previous_read = now;
  described_count_ = static_cast<unsigned>(s.devices.size());
  state_ = std::move(w.next);
  // Only now, with the state that names them gone, can vanished units' buffers be freed.
  FreeGpmSamples(state_, &w.reading.faults);
  return std::move(w.reading);
}

void NvmlGpuSource::Enumerate(Work& w, unsigned count) {
  State& s = w.next;
  std::vector<DeviceState> devices;
  auto handle_by_index = api_.handle_by_index;
  auto uuid_fn = api_.uuid;
  auto name_fn = api_.name;
  for (unsigned i = 0; i < count && !w.timed_out; ++i) {
    const std::string where = "index " + std::to_string(i);
    nvmlDevice_t handle = nullptr;
    nvmlReturn_t ret =
        Call(w, "nvmlDeviceGetHandleByIndex_v2(" + where + ")", handle,
             [handle_by_index, i](nvmlDevice_t& h) { return handle_by_index(i, &h); });
    if (ret != NVML_SUCCESS) {
      if (!w.timed_out) {
        w.reading.faults.push_back(
            Fault(ErrorName(ret), "nvmlDeviceGetHandleByIndex_v2(" + where + ")"));
      }
      continue;
    }
    std::array<char, NVML_DEVICE_UUID_V2_BUFFER_SIZE> uuid_buf{};
    ret = Call(w, "nvmlDeviceGetUUID(" + where + ")", uuid_buf,
               [uuid_fn, handle](auto& b) { return uuid_fn(handle, b.data(), b.size()); });
    if (ret != NVML_SUCCESS) {
      if (!w.timed_out) {
        w.reading.faults.push_back(Fault(ErrorName(ret), "nvmlDeviceGetUUID(" + where + ")"));
      }
      continue;
    }
    const std::string uuid = CString(uuid_buf);
    DeviceState d;
    auto old = std::find_if(s.devices.begin(), s.devices.end(),
                            [&](const DeviceState& o) { return o.uuid == uuid; });
    if (old != s.devices.end() && s.lost.count(uuid) == 0) {
      d = std::move(*old);  // keep its baselines: handles may change, counters do not
    }
    d.handle = handle;
    d.uuid = uuid;
    std::array<char, NVML_DEVICE_NAME_V2_BUFFER_SIZE> name_buf{};
    ret = Call(w, "nvmlDeviceGetName(" + uuid + ")", name_buf,
               [name_fn, handle](auto& b) { return name_fn(handle, b.data(), b.size()); });
    if (ret == NVML_ERROR_GPU_IS_LOST) {
      s.lost[uuid] = "nvmlDeviceGetName(" + uuid + ")";
      continue;
    }
    if (ret != NVML_SUCCESS) {
      if (!w.timed_out) {
        w.reading.faults.push_back(Fault(ErrorName(ret), "nvmlDeviceGetName(" + uuid + ")"));
      }
    } else {
      d.name = CString(name_buf);
    }
    s.lost.erase(uuid);
    QueryGpm(w, d);
    devices.push_back(std::move(d));
  }
  s.devices = std::move(devices);
  s.enumerated = !w.timed_out;
  s.reads_since_enumeration = 0;
}

std::optional<std::vector<UtilSample>> NvmlGpuSource::ReadUtilSamples(Work& w, DeviceState& d) {
  constexpr const char* kFn = "nvmlDeviceGetSamples";
  if (!Supported(d, kFn, false) || api_.samples == nullptr) {
    return std::nullopt;  // absent symbol: fall back silently to utilization rates
  }
  struct Box {
    nvmlValueType_t type = NVML_VALUE_TYPE_UNSIGNED_INT;
    unsigned count = 0;
    std::vector<nvmlSample_t> buffer;
  };
  auto samples_fn = api_.samples;
  nvmlDevice_t handle = d.handle;
  const unsigned long long last_seen = QueryTimestamp(d.util_cursor, w.step);
  Box box;
  nvmlReturn_t ret = NVML_ERROR_INSUFFICIENT_SIZE;
  for (int attempt = 0; attempt < kMaxGrowAttempts && ret == NVML_ERROR_INSUFFICIENT_SIZE;
       ++attempt) {
    box = Box{NVML_VALUE_TYPE_UNSIGNED_INT, d.sample_capacity,
              std::vector<nvmlSample_t>(d.sample_capacity)};
    ret = Call(w, std::string(kFn) + "(" + d.uuid + ")", box, [=](Box& b) {
      return samples_fn(handle, NVML_GPU_UTILIZATION_SAMPLES, last_seen, &b.type, &b.count,
                        b.buffer.data());
    });
    if (ret == NVML_ERROR_INSUFFICIENT_SIZE) {
      d.sample_capacity =
          std::min(std::max(box.count, d.sample_capacity) + kGrowMargin, kMaxEntries);
    }
  }
  if (ret == NVML_ERROR_NOT_FOUND) {
    return std::vector<UtilSample>{};
  }
  if (ret != NVML_SUCCESS) {
    Note(w, d, kFn, false, d.uuid, ret);
    return std::nullopt;
  }
  std::vector<UtilSample> out;
  const unsigned n = std::min<unsigned>(box.count, box.buffer.size());
  for (unsigned i = 0; i < n; ++i) {
    out.push_back({box.buffer[i].timeStamp, 0, SampleValue(box.type, box.buffer[i].sampleValue)});
  }
  return out;
}

std::optional<std::vector<UtilSample>> NvmlGpuSource::ReadProcessSamples(Work& w, DeviceState& d) {
  constexpr const char* kInfoFn = "nvmlDeviceGetProcessesUtilizationInfo";
  constexpr const char* kLegacyFn = "nvmlDeviceGetProcessUtilization";
  nvmlDevice_t handle = d.handle;
  const unsigned long long last_seen = QueryTimestamp(d.process_cursor, w.step);
  if (api_.processes_utilization_info != nullptr && !d.legacy_process_util) {
    struct Box {
      nvmlProcessesUtilizationInfo_t info{};
      std::vector<nvmlProcessUtilizationInfo_v1_t> buffer;
    };
    auto fn = api_.processes_utilization_info;
    Box box;
    nvmlReturn_t ret = NVML_ERROR_INSUFFICIENT_SIZE;
    for (int attempt = 0; attempt < kMaxGrowAttempts && ret == NVML_ERROR_INSUFFICIENT_SIZE;
         ++attempt) {
      box = Box{};
      box.buffer.resize(d.process_sample_capacity);
      box.info.version = nvmlProcessesUtilizationInfo_v1;
      box.info.processSamplesCount = d.process_sample_capacity;
      box.info.lastSeenTimeStamp = last_seen;
      ret = Call(w, std::string(kInfoFn) + "(" + d.uuid + ")", box, [=](Box& b) {
        b.info.procUtilArray = b.buffer.data();
        return fn(handle, &b.info);
      });
      if (ret == NVML_ERROR_INSUFFICIENT_SIZE) {
        d.process_sample_capacity = std::min(
            std::max(box.info.processSamplesCount, d.process_sample_capacity) + kGrowMargin,
            kMaxEntries);
      }
    }
    if (ret == NVML_SUCCESS || ret == NVML_ERROR_NOT_FOUND) {
      std::vector<UtilSample> out;
      if (ret == NVML_SUCCESS) {
        const unsigned n = std::min<unsigned>(box.info.processSamplesCount, box.buffer.size());
        for (unsigned i = 0; i < n; ++i) {
          const auto& e = box.buffer[i];
          out.push_back({e.timeStamp, e.pid, static_cast<double>(e.smUtil)});
        }
      }
      return out;
    }
    if (ret == NVML_ERROR_NOT_SUPPORTED || ret == NVML_ERROR_FUNCTION_NOT_FOUND ||
        ret == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
      d.legacy_process_util = true;  // this driver or device: use the older entry point
    } else {
      Note(w, d, kInfoFn, false, d.uuid, ret);
      return std::nullopt;
    }
  }
  if (!Supported(d, kLegacyFn, false)) {
    return std::nullopt;
  }
  if (api_.process_utilization == nullptr) {
    Note(w, d, kLegacyFn, false, d.uuid, NVML_ERROR_FUNCTION_NOT_FOUND);
    return std::nullopt;
  }
  struct Box {
    unsigned count = 0;
    std::vector<nvmlProcessUtilizationSample_t> buffer;
  };
  auto fn = api_.process_utilization;
  Box box;
  nvmlReturn_t ret = NVML_ERROR_INSUFFICIENT_SIZE;
  for (int attempt = 0; attempt < kMaxGrowAttempts && ret == NVML_ERROR_INSUFFICIENT_SIZE;
       ++attempt) {
    box = Box{d.process_sample_capacity,
              std::vector<nvmlProcessUtilizationSample_t>(d.process_sample_capacity)};
    ret = Call(w, std::string(kLegacyFn) + "(" + d.uuid + ")", box,
               [=](Box& b) { return fn(handle, b.buffer.data(), &b.count, last_seen); });
    if (ret == NVML_ERROR_INSUFFICIENT_SIZE) {
      d.process_sample_capacity =
          std::min(std::max(box.count, d.process_sample_capacity) + kGrowMargin, kMaxEntries);
    }
  }
  if (ret == NVML_ERROR_NOT_FOUND) {
    return std::vector<UtilSample>{};
  }
  if (ret != NVML_SUCCESS) {
    Note(w, d, kLegacyFn, false, d.uuid, ret);
    return std::nullopt;
  }
  std::vector<UtilSample> out;
  const unsigned n = std::min<unsigned>(box.count, box.buffer.size());
  for (unsigned i = 0; i < n; ++i) {
    const auto& e = box.buffer[i];
    out.push_back({e.timeStamp, e.pid, static_cast<double>(e.smUtil)});
  }
  return out;
}

void NvmlGpuSource::ListProcesses(Work& w, DeviceState& d, nvmlDevice_t handle,
                                  const std::string& subject, bool mig,
                                  std::vector<ProcessEntry>& out) {
  struct Entry {
    const char* name;
    nvmlDeviceGetComputeRunningProcesses_v3_fn fn;
  };
  const Entry entries[] = {
      {"nvmlDeviceGetComputeRunningProcesses_v3", api_.compute_processes},
      {"nvmlDeviceGetMPSComputeRunningProcesses_v3", api_.mps_compute_processes},
  };
  for (const auto& [fn_name, fn] : entries) {
    if (!Supported(d, fn_name, mig)) {
      continue;
    }
    if (fn == nullptr) {
      Note(w, d, fn_name, mig, subject, NVML_ERROR_FUNCTION_NOT_FOUND);
      continue;
    }
    struct Box {
      unsigned count = 0;
      std::vector<nvmlProcessInfo_t> buffer;
    };
    Box box;
    nvmlReturn_t ret = NVML_ERROR_INSUFFICIENT_SIZE;
    for (int attempt = 0; attempt < kMaxGrowAttempts && ret == NVML_ERROR_INSUFFICIENT_SIZE;
         ++attempt) {
      box = Box{d.process_capacity, std::vector<nvmlProcessInfo_t>(d.process_capacity)};
      std::memset(static_cast<void*>(box.buffer.data()), kSentinel,
                  box.buffer.size() * sizeof(nvmlProcessInfo_t));
      ret = Call(w, std::string(fn_name) + "(" + subject + ")", box,
                 [fn = fn, handle](Box& b) { return fn(handle, &b.count, b.buffer.data()); });
      if (ret == NVML_ERROR_INSUFFICIENT_SIZE) {
        d.process_capacity =
            std::min(std::max(box.count, d.process_capacity) + kGrowMargin, kMaxEntries);
      }
    }
    if (ret != NVML_SUCCESS) {
      Note(w, d, fn_name, mig, subject, ret);
      if (ret == NVML_ERROR_GPU_IS_LOST || w.timed_out) {
        return;
      }
      continue;
    }
    const bool mps_list = fn == api_.mps_compute_processes;
    for (ProcessEntry e :
         ParseProcessInfos(box.buffer.data(), box.buffer.size(), box.count, kSentinel)) {
      e.mps_client = mps_list;
      auto same = std::find_if(out.begin(), out.end(),
                               [&](const ProcessEntry& o) { return o.pid == e.pid; });
      if (same == out.end()) {
        out.push_back(e);
      } else {
        same->used_memory_bytes = std::max(same->used_memory_bytes, e.used_memory_bytes);
        same->mps_client = same->mps_client || e.mps_client;
      }
    }
  }
}

void NvmlGpuSource::ReadMig(Work& w, DeviceState& d, bool baseline, std::vector<MigInstance>& migs,
                            std::vector<DeviceSignals>& signals,
                            std::vector<ProcessObservation>& processes) {
  nvmlDevice_t parent = d.handle;
  auto max_fn = api_.max_mig_device_count;
  auto max = Get<unsigned>(w, d, "nvmlDeviceGetMaxMigDeviceCount", max_fn != nullptr, false, d.uuid,
                           [max_fn, parent](unsigned& c) { return max_fn(parent, &c); });
  if (!max || !d.lost_call.empty()) {
    return;
  }
  constexpr const char* kByIndex = "nvmlDeviceGetMigDeviceHandleByIndex";
  if (api_.mig_device_handle_by_index == nullptr) {
    Note(w, d, kByIndex, false, d.uuid, NVML_ERROR_FUNCTION_NOT_FOUND);
    return;
  }
  auto by_index = api_.mig_device_handle_by_index;
  auto uuid_fn = api_.uuid;
  auto name_fn = api_.name;
  auto memory_fn = api_.memory_info;
  auto attributes_fn = api_.attributes;
  for (unsigned i = 0; i < *max && d.lost_call.empty() && !w.timed_out; ++i) {
    const std::string where = d.uuid + " MIG " + std::to_string(i);
    nvmlDevice_t mig = nullptr;
    nvmlReturn_t ret =
        Call(w, std::string(kByIndex) + "(" + where + ")", mig,
             [by_index, parent, i](nvmlDevice_t& m) { return by_index(parent, i, &m); });
    if (ret == NVML_ERROR_NOT_FOUND || ret == NVML_ERROR_INVALID_ARGUMENT) {
      continue;  // an empty slot
    }
    if (ret != NVML_SUCCESS) {
      Note(w, d, kByIndex, false, where, ret);
      continue;
    }
    std::array<char, NVML_DEVICE_UUID_V2_BUFFER_SIZE> uuid_buf{};
    ret = Call(w, "nvmlDeviceGetUUID(" + where + ")", uuid_buf,
               [uuid_fn, mig](auto& b) { return uuid_fn(mig, b.data(), b.size()); });
    if (ret != NVML_SUCCESS) {
      Note(w, d, "nvmlDeviceGetUUID", true, where, ret);
      continue;
    }
    const std::string mig_uuid = CString(uuid_buf);
    std::array<char, NVML_DEVICE_NAME_V2_BUFFER_SIZE> name_buf{};
    ret = Call(w, "nvmlDeviceGetName(" + mig_uuid + ")", name_buf,
               [name_fn, mig](auto& b) { return name_fn(mig, b.data(), b.size()); });
    std::string name;
    if (ret == NVML_SUCCESS) {
      name = CString(name_buf);
    } else {
      Note(w, d, "nvmlDeviceGetName", true, mig_uuid, ret);
    }
    nvmlMemory_t memory{};
    ret = Call(w, "nvmlDeviceGetMemoryInfo(" + mig_uuid + ")", memory,
               [memory_fn, mig](nvmlMemory_t& m) { return memory_fn(mig, &m); });
    const bool have_memory = ret == NVML_SUCCESS;
    if (!have_memory) {
      Note(w, d, "nvmlDeviceGetMemoryInfo", true, mig_uuid, ret);
    }
    auto attributes = Get<nvmlDeviceAttributes_t>(
        w, d, "nvmlDeviceGetAttributes_v2", attributes_fn != nullptr, true, mig_uuid,
        [attributes_fn, mig](nvmlDeviceAttributes_t& a) { return attributes_fn(mig, &a); });
    if (!d.lost_call.empty()) {
      return;
    }
    MigInstance instance;
    instance.uuid = GpuUuid{mig_uuid};
    instance.parent = GpuUuid{d.uuid};
    instance.profile = ParseMigProfile(name);
    if (attributes && attributes->gpuInstanceSliceCount > 0) {
      instance.compute_slices = static_cast<int>(attributes->gpuInstanceSliceCount);
      if (instance.profile.empty()) {
        instance.profile = std::to_string(attributes->gpuInstanceSliceCount) + "g." +
                           std::to_string((attributes->memorySizeMB + 1023) / 1024) + "gb";
      }
    } else if (int slices = ProfileSlices(instance.profile); slices > 0) {
      instance.compute_slices = slices;
    }
    instance.memory_total_bytes =
        have_memory ? static_cast<Bytes>(memory.total)
                    : (attributes ? static_cast<Bytes>(attributes->memorySizeMB) * kMiB : 0);
    // The GPU instance id: GPM samples the parent GPU by it, and DCGM names instances by it.
    auto gi_fn = api_.gpu_instance_id;
    auto gi = Get<unsigned>(w, d, "nvmlDeviceGetGpuInstanceId", gi_fn != nullptr, true, mig_uuid,
                            [gi_fn, mig](unsigned& id) { return gi_fn(mig, &id); });
    if (gi) instance.gpu_instance_id = static_cast<int>(*gi);
    migs.push_back(instance);
    GpmReadout gpm;
    if (d.gpm && gi && d.lost_call.empty()) gpm = ReadGpm(w, d, *gi, mig_uuid);
    if (!baseline) {
      DeviceSignals signal;
      signal.device = instance.uuid;
      signal.memory_used_bytes = have_memory ? static_cast<Bytes>(memory.used) : 0;
      if (gpm.graphics_us) {
        signal.busy_us = gpm.graphics_us;
        signal.busy_source = SignalSource::kGpm;
      }
      if (gpm.activity) {
        signal.activity = gpm.activity;
        signal.activity_source = SignalSource::kGpm;
      }
      signals.push_back(std::move(signal));
    }
    std::vector<ProcessEntry> entries;
    ListProcesses(w, d, mig, mig_uuid, true, entries);
    for (const auto& e : entries) {
      ProcessObservation p;
      p.pid = static_cast<int>(e.pid);
      p.device = instance.uuid;
      p.used_memory_bytes = e.used_memory_bytes;
      p.mps_client = e.mps_client;
      processes.push_back(std::move(p));  // NVML has no per-process utilization on MIG
    }
  }
}

void NvmlGpuSource::ReadDevice(Work& w, DeviceState& d) {
  const bool baseline = d.fresh;
  nvmlDevice_t handle = d.handle;
  d.gpm_seen.clear();
  GpuReading out;  // this device's part, appended unless the device is lost

  auto memory_fn = api_.memory_info;
  nvmlMemory_t memory{};
  nvmlReturn_t ret = Call(w, "nvmlDeviceGetMemoryInfo(" + d.uuid + ")", memory,
                          [memory_fn, handle](nvmlMemory_t& m) { return memory_fn(handle, &m); });
  const bool have_memory = ret == NVML_SUCCESS;
  if (!have_memory) {
    Note(w, d, "nvmlDeviceGetMemoryInfo", false, d.uuid, ret);
  }
  if (!d.lost_call.empty() || w.timed_out) {
    return;
  }

  auto mig_fn = api_.mig_mode;
  auto mig_mode = Get<std::pair<unsigned, unsigned>>(
      w, d, "nvmlDeviceGetMigMode", mig_fn != nullptr, false, d.uuid,
      [mig_fn, handle](std::pair<unsigned, unsigned>& m) {
        return mig_fn(handle, &m.first, &m.second);
      });
  const bool mig = mig_mode && mig_mode->first == NVML_DEVICE_MIG_ENABLE;
  if (!d.lost_call.empty() || w.timed_out) {
    return;
  }

  auto power_fn = api_.power_usage;
  auto power = Get<unsigned>(w, d, "nvmlDeviceGetPowerUsage", power_fn != nullptr, false, d.uuid,
                             [power_fn, handle](unsigned& p) { return power_fn(handle, &p); });
  auto energy_fn = api_.total_energy;
  auto energy = Get<unsigned long long>(
      w, d, "nvmlDeviceGetTotalEnergyConsumption", energy_fn != nullptr, false, d.uuid,
      [energy_fn, handle](unsigned long long& e) { return energy_fn(handle, &e); });

  PhysicalGpu gpu;
  gpu.uuid = GpuUuid{d.uuid};
  gpu.model = d.name;
  gpu.memory_total_bytes = have_memory ? static_cast<Bytes>(memory.total) : 0;
  if (d.name.find("A30") != std::string::npos) {
    gpu.total_slices = 4;
  }
  sources::GpuInstantaneous instant;
  instant.device = gpu.uuid;
  instant.product_name = d.name;
  instant.power_mw = power.value_or(0);
  instant.energy_total_mj = static_cast<MilliJoules>(energy.value_or(0));
  instant.memory_used_bytes = have_memory ? static_cast<Bytes>(memory.used) : 0;
  instant.memory_total_bytes = gpu.memory_total_bytes;

  DeviceSignals signal;
  signal.device = gpu.uuid;
  signal.memory_used_bytes = instant.memory_used_bytes;
  if (energy) {
    if (d.energy_mj && !baseline && *energy >= *d.energy_mj) {
      signal.energy_mj = static_cast<MilliJoules>(*energy - *d.energy_mj);
    }
    // A decrease is a counter reset (driver reload): the new value is a fresh baseline.
    d.energy_mj = *energy;
  } else {
    d.energy_mj.reset();
  }

  std::vector<MigInstance> migs;
  std::vector<DeviceSignals> mig_signals;
  std::vector<ProcessObservation> processes;
  if (mig) {
    ReadMig(w, d, baseline, migs, mig_signals, processes);
  } else {
    // Device busy time: GPU-utilization samples when NVML keeps them, else utilization x period.
    auto rates_fn = api_.utilization_rates;
    auto rates = Get<nvmlUtilization_t>(
        w, d, "nvmlDeviceGetUtilizationRates", rates_fn != nullptr, false, d.uuid,
        [rates_fn, handle](nvmlUtilization_t& u) { return rates_fn(handle, &u); });
    if (rates) {
      instant.utilization_percent = static_cast<int>(rates->gpu);
    }
    auto samples = ReadUtilSamples(w, d);
    std::optional<GpuMicros> busy;
    if (samples) {
      PlaceSamples(*samples, d.util_cursor, w.step);
      const bool any = !samples->empty();
      auto integral =
          IntegrateSamples(std::move(*samples), d.util_cursor, w.previous_read_us, w.max_period_us);
      if (any || d.util_samples_seen) {
        busy = PercentMicrosToMicros(integral[0], w.interval_us);
      }
      d.util_samples_seen = d.util_samples_seen || any;
    }
    if (!busy && rates) {
      busy =
          Clamp((static_cast<std::int64_t>(rates->gpu) * w.interval_us + 50) / 100, w.interval_us);
    }
    signal.busy_us = busy;
    if (d.gpm) {
      GpmReadout gpm = ReadGpm(w, d, kGpmWholeGpu, d.uuid);
      if (gpm.activity) {
        signal.activity = gpm.activity;
        signal.activity_source = SignalSource::kGpm;
      }
    }

    // Per-process SM time from per-process samples, passing the previous lastSeenTimeStamp.
    std::optional<std::map<unsigned, std::int64_t>> per_pid;
    if (auto process_samples = ReadProcessSamples(w, d)) {
      PlaceSamples(*process_samples, d.process_cursor, w.step);
      per_pid = IntegrateSamples(std::move(*process_samples), d.process_cursor, w.previous_read_us,
                                 w.max_period_us);
    }
    std::vector<ProcessEntry> entries;
    ListProcesses(w, d, handle, d.uuid, false, entries);
    std::set<unsigned> listed;
    for (const auto& e : entries) {
      listed.insert(e.pid);
      ProcessObservation p;
      p.pid = static_cast<int>(e.pid);
      p.device = gpu.uuid;
      p.used_memory_bytes = e.used_memory_bytes;
      p.mps_client = e.mps_client;
      if (per_pid && !baseline) {
        auto it = per_pid->find(e.pid);
        p.sm_busy_us = PercentMicrosToMicros(it == per_pid->end() ? 0 : it->second, w.interval_us);
      }
      processes.push_back(std::move(p));
    }
    // A process that ran during the interval but exited before the listing still used the GPU.
    if (per_pid && !baseline) {
      for (const auto& [pid, percent_us] : *per_pid) {
        if (listed.count(pid) == 0 && PercentMicrosToMicros(percent_us, w.interval_us) > 0) {
          ProcessObservation p;
          p.pid = static_cast<int>(pid);
          p.device = gpu.uuid;
          p.sm_busy_us = PercentMicrosToMicros(percent_us, w.interval_us);
          processes.push_back(std::move(p));
        }
      }
    }
  }
  if (!d.lost_call.empty() || w.timed_out) {
    return;
  }
  // Units not sampled this read (a MIG instance destroyed, MIG mode toggled) lose their samples;
  // the buffers are freed once this read is committed.
  std::erase_if(d.gpm_units, [&](const auto& u) { return d.gpm_seen.count(u.first) == 0; });
  GpuReading& r = w.reading;
  r.gpus.push_back(std::move(gpu));
  r.instant.push_back(std::move(instant));
  for (auto& m : migs) r.mig_instances.push_back(std::move(m));
  if (!baseline) {
    r.signals.push_back(std::move(signal));
    for (auto& s : mig_signals) r.signals.push_back(std::move(s));
  }
  for (auto& p : processes) r.processes.push_back(std::move(p));
}

void NvmlGpuSource::QueryGpm(Work& w, DeviceState& d) {
  constexpr const char* kFn = "nvmlGpmQueryDeviceSupport";
  d.gpm = false;
  // A driver without GPM (before R520) lacks the symbols: no GPM, nothing to report.
  auto query = api_.gpm_query_device_support;
  if (query == nullptr || api_.gpm_sample_alloc == nullptr || api_.gpm_sample_free == nullptr ||
      api_.gpm_metrics_get == nullptr ||
      (api_.gpm_sample_get == nullptr && api_.gpm_mig_sample_get == nullptr)) {
    d.gpm_units.clear();
    return;
  }
  nvmlGpmSupport_t support{};
  support.version = NVML_GPM_SUPPORT_VERSION;
  nvmlDevice_t handle = d.handle;
  const nvmlReturn_t ret = Call(w, std::string(kFn) + "(" + d.uuid + ")", support,
                                [query, handle](nvmlGpmSupport_t& g) { return query(handle, &g); });
  if (ret != NVML_SUCCESS) {
    Note(w, d, kFn, false, d.uuid, ret);  // NOT_SUPPORTED: reported once per device
  } else {
    d.gpm = support.isSupportedDevice != 0;  // 0 on pre-Hopper GPUs: normal, not a fault
  }
  if (!d.gpm) d.gpm_units.clear();
}

GpmReadout NvmlGpuSource::ReadGpm(Work& w, DeviceState& d, unsigned gpu_instance_id,
                                  const std::string& subject) {
  GpmReadout out;
  const bool whole = gpu_instance_id == kGpmWholeGpu;
  const char* get_name = whole ? "nvmlGpmSampleGet" : "nvmlGpmMigSampleGet";
  auto sample_get = api_.gpm_sample_get;
  auto mig_sample_get = api_.gpm_mig_sample_get;
  if ((whole ? sample_get == nullptr : mig_sample_get == nullptr) ||
      !Supported(d, get_name, !whole)) {
    return out;  // this driver samples only the other kind of unit, or said NOT_SUPPORTED
  }
  d.gpm_seen.insert(gpu_instance_id);
  GpmUnit& unit = d.gpm_units[gpu_instance_id];
  auto alloc = api_.gpm_sample_alloc;
  for (nvmlGpmSample_t* slot : {&unit.previous, &unit.current}) {
    if (*slot != nullptr) continue;
    nvmlGpmSample_t sample = nullptr;
    const nvmlReturn_t ret = Call(w, "nvmlGpmSampleAlloc(" + subject + ")", sample,
                                  [alloc](nvmlGpmSample_t& s) { return alloc(&s); });
    if (ret != NVML_SUCCESS || sample == nullptr) {
      Note(w, d, "nvmlGpmSampleAlloc", !whole, subject,
           ret == NVML_SUCCESS ? NVML_ERROR_MEMORY : ret);
      return out;
    }
    gpm_pool_.insert(sample);
    *slot = sample;
  }
  // Sample into `current`; the previous sample stays untouched until the read commits.
  nvmlDevice_t handle = d.handle;
  nvmlGpmSample_t current = unit.current;
  nvmlReturn_t ret = NVML_SUCCESS;
  if (whole) {
    ret = Call(w, std::string(get_name) + "(" + subject + ")", current,
               [sample_get, handle](nvmlGpmSample_t& s) { return sample_get(handle, s); });
  } else {
    ret = Call(w, std::string(get_name) + "(" + subject + ")", current,
               [mig_sample_get, handle, gpu_instance_id](nvmlGpmSample_t& s) {
                 return mig_sample_get(handle, gpu_instance_id, s);
               });
  }
  if (ret != NVML_SUCCESS) {
    Note(w, d, get_name, !whole, subject, ret);
    unit.has_previous = false;  // the next read starts over rather than span the gap
    return out;
  }
  const bool had_previous = unit.has_previous;
  const nvmlGpmSample_t previous = unit.previous;
  std::swap(unit.previous, unit.current);
  unit.has_previous = true;
  if (!had_previous) {
    return out;  // a first sample: the next read measures from it
  }

  // Percentages averaged between the two samples, integrated over this read's interval.
  constexpr nvmlGpmMetricId_t kIds[] = {
      NVML_GPM_METRIC_SM_UTIL, NVML_GPM_METRIC_SM_OCCUPANCY, NVML_GPM_METRIC_ANY_TENSOR_UTIL,
      NVML_GPM_METRIC_DRAM_BW_UTIL, NVML_GPM_METRIC_GRAPHICS_UTIL};
  constexpr const char* kNames[] = {"SM_UTIL", "SM_OCCUPANCY", "ANY_TENSOR_UTIL", "DRAM_BW_UTIL",
                                    "GRAPHICS_UTIL"};
  // A GPU's busy time comes from its utilization samples; a MIG instance's from GRAPHICS_UTIL.
  const unsigned count = whole ? 4 : 5;
  auto box = std::make_unique<nvmlGpmMetricsGet_t>();
  box->version = NVML_GPM_METRICS_GET_VERSION;
  box->numMetrics = count;
  box->sample1 = previous;
  box->sample2 = current;
  for (unsigned i = 0; i < count; ++i) box->metrics[i].metricId = kIds[i];
  auto metrics_get = api_.gpm_metrics_get;
  ret =
      Call(w, "nvmlGpmMetricsGet(" + subject + ")", box,
           [metrics_get](std::unique_ptr<nvmlGpmMetricsGet_t>& m) { return metrics_get(m.get()); });
  if (ret != NVML_SUCCESS) {
    Note(w, d, "nvmlGpmMetricsGet", !whole, subject, ret);
    return out;
  }
  std::optional<GpuMicros> values[5];
  for (unsigned i = 0; i < count; ++i) {
    const nvmlGpmMetric_t& m = box->metrics[i];
    if (m.nvmlReturn != NVML_SUCCESS) {
      // One metric missing: no activity for this unit this read (a partial Activity would read
      // as zero); NOT_SUPPORTED is reported once per metric and device, other codes every time.
      const bool once = m.nvmlReturn == NVML_ERROR_NOT_SUPPORTED;
      if (!once || d.unsupported.insert(Key(kNames[i], !whole)).second) {
        w.reading.faults.push_back(
            Fault(ErrorName(m.nvmlReturn), "nvmlGpmMetricsGet(" + subject + " " + kNames[i] + ")"));
      }
      continue;
    }
    const double percent = std::isfinite(m.value) ? std::clamp(m.value, 0.0, 100.0) : 0.0;
    values[i] =
        Clamp(std::llround(percent / 100.0 * static_cast<double>(w.interval_us)), w.interval_us);
  }
  if (values[0] && values[1] && values[2] && values[3]) {
    out.activity = Activity{*values[0], *values[1], *values[2], *values[3]};
  }
  if (!whole) out.graphics_us = values[4];
  return out;
}

void NvmlGpuSource::FreeGpmSamples(const State& keep, std::vector<SourceFault>* faults) {
  std::set<nvmlGpmSample_t> named;
  for (const DeviceState& d : keep.devices) {
    for (const auto& [id, unit] : d.gpm_units) {
      named.insert(unit.previous);
      named.insert(unit.current);
    }
  }
  auto free_fn = api_.gpm_sample_free;
  for (auto it = gpm_pool_.begin(); it != gpm_pool_.end();) {
    if (named.count(*it) != 0) {
      ++it;
      continue;
    }
    const nvmlGpmSample_t sample = *it;
    it = gpm_pool_.erase(it);  // never freed twice, even when the free below hangs
    if (free_fn == nullptr) continue;
    auto result = std::make_shared<nvmlReturn_t>(NVML_ERROR_UNKNOWN);
    const auto outcome = watchdog_->Run("nvmlGpmSampleFree()",
                                        [free_fn, sample, result] { *result = free_fn(sample); });
    if (outcome != Watchdog::Outcome::kDone) {
      if (faults != nullptr) faults->push_back(Fault("TIMEOUT", "nvmlGpmSampleFree()"));
      return;  // the next commit (or the destructor, if the call returns) frees the rest
    }
    if (*result != NVML_SUCCESS && faults != nullptr) {
      faults->push_back(Fault(ErrorName(*result), "nvmlGpmSampleFree()"));
    }
  }
}

class NoGpuSource final : public sources::GpuSource {
 public:
  NoGpuSource(SourceFault fault, std::string why, const Clock& clock)
      : fault_(std::move(fault)), why_(std::move(why)), clock_(clock) {}

  Result<GpuReading> Read() override {
    const ClockReading now = clock_.Now();
    const ClockInterval interval =
        previous_ ? IntervalBetween(*previous_, now) : ClockInterval{now.wall_us, now.wall_us, 0};
    previous_ = now;
    GpuReading r;
    r.start_us = interval.start_us;
    r.end_us = interval.end_us;
    r.wall_step_us = interval.wall_step_us;
    r.faults.push_back(fault_);
    return r;
  }
  std::string Describe() const override { return "no GPU: " + why_; }

 private:
  SourceFault fault_;
  std::string why_;
  const Clock& clock_;
  std::optional<ClockReading> previous_;
};

}  // namespace

std::unique_ptr<sources::GpuSource> MakeNoGpuSource(SourceFault fault, std::string why,
                                                    const Clock& clock) {
  return std::make_unique<NoGpuSource>(std::move(fault), std::move(why), clock);
}

std::unique_ptr<sources::GpuSource> OpenNvmlSource(NvmlApi api, NvmlSourceOptions options,
                                                   const Clock& clock) {
  auto watchdog = std::make_unique<Watchdog>(options.call_deadline_us, api.library);
  // Heap-held result: after a timeout the (detached) worker still writes it.
  auto result = std::make_shared<nvmlReturn_t>(NVML_ERROR_UNKNOWN);
  auto init = api.init;
  auto outcome = watchdog->Run("nvmlInit_v2()", [init, result] { *result = init(); });
  const nvmlReturn_t ret = *result;
  if (outcome != Watchdog::Outcome::kDone) {
    return MakeNoGpuSource(Fault("TIMEOUT", "nvmlInit_v2()"),
                           "nvmlInit_v2 did not return within " +
                               std::to_string(options.call_deadline_us / 1000) + " ms",
                           clock);
  }
  if (ret != NVML_SUCCESS) {
    std::string why = "nvmlInit_v2: " + ErrorName(ret);
    if (api.error_string != nullptr) {
      if (const char* text = api.error_string(ret)) why += std::string(" (") + text + ")";
    }
    return MakeNoGpuSource(Fault(ErrorName(ret), "nvmlInit_v2()"), why, clock);
  }
  std::string driver;
  if (api.driver_version != nullptr) {
    auto box = std::make_shared<
        std::pair<std::array<char, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE>, nvmlReturn_t>>();
    auto fn = api.driver_version;
    if (watchdog->Run("nvmlSystemGetDriverVersion()",
                      [box, fn] { box->second = fn(box->first.data(), box->first.size()); }) ==
            Watchdog::Outcome::kDone &&
        box->second == NVML_SUCCESS) {
      driver = CString(box->first);
    }
  }
  return std::make_unique<NvmlGpuSource>(std::move(api), options, clock, std::move(watchdog),
                                         std::move(driver), 0);
}

std::unique_ptr<sources::GpuSource> OpenNvmlSource(const std::string& library,
                                                   Micros call_deadline_us, const Clock& clock) {
  auto opened = OpenDynamicLibrary(library);
  if (!opened) {
    return MakeNoGpuSource(Fault("LIBRARY_NOT_FOUND", library), library + " not found", clock);
  }
  auto api = LoadNvml(std::shared_ptr<DynamicLibrary>(std::move(*opened)));
  if (!api) {
    return MakeNoGpuSource(Fault("FUNCTION_NOT_FOUND", library), api.error().message, clock);
  }
  NvmlSourceOptions options;
  options.call_deadline_us = call_deadline_us;
  return OpenNvmlSource(std::move(*api), options, clock);
}

// ---- Pure helpers ------------------------------------------------------------------------------

std::string ParseMigProfile(std::string_view name) {
  const auto space = name.find_last_of(' ');
  std::string_view token = space == std::string_view::npos ? name : name.substr(space + 1);
  // [<n>c.]<n>g.<n>gb[+suffix]
  std::size_t i = 0;
  auto digits = [&] {
    const std::size_t start = i;
    while (i < token.size() && std::isdigit(static_cast<unsigned char>(token[i]))) ++i;
    return i > start;
  };
  auto literal = [&](std::string_view s) {
    if (token.substr(i, s.size()) != s) return false;
    i += s.size();
    return true;
  };
  std::size_t save = i;
  if (!(digits() && literal("c."))) i = save;
  if (!(digits() && literal("g.") && digits() && literal("gb"))) return {};
  if (i < token.size()) {
    if (token[i] != '+' && token[i] != '-') return {};
    for (std::size_t j = i + 1; j < token.size(); ++j) {
      if (!std::isalnum(static_cast<unsigned char>(token[j]))) return {};
    }
    if (i + 1 == token.size()) return {};
  }
  return std::string(token);
}

int ProfileSlices(std::string_view profile) {
  const auto g = profile.find("g.");
  if (g == std::string_view::npos || g == 0) return 0;
  std::size_t start = g;
  while (start > 0 && std::isdigit(static_cast<unsigned char>(profile[start - 1]))) --start;
  if (start == g) return 0;
  int n = 0;
  for (std::size_t k = start; k < g; ++k) n = n * 10 + (profile[k] - '0');
  return n;
}

std::vector<ProcessEntry> ParseProcessInfos(const nvmlProcessInfo_t* buffer, std::size_t capacity,
                                            unsigned count, unsigned char sentinel) {
  std::vector<ProcessEntry> out;
  const std::size_t n = std::min<std::size_t>(count, capacity);
  if (n == 0) return out;
  const auto* bytes = reinterpret_cast<const unsigned char*>(buffer);
  std::size_t written = capacity * sizeof(nvmlProcessInfo_t);
  while (written > 0 && bytes[written - 1] == sentinel) --written;
  const std::size_t stride = written <= n * sizeof(nvmlProcessInfo_v2_t)
                                 ? sizeof(nvmlProcessInfo_v2_t)
                                 : sizeof(nvmlProcessInfo_t);
  for (std::size_t k = 0; k < n; ++k) {
    // pid at 0 and usedGpuMemory at 8 in both layouts.
    unsigned pid = 0;
    unsigned long long used = 0;
    std::memcpy(&pid, bytes + k * stride + offsetof(nvmlProcessInfo_t, pid), sizeof(pid));
    std::memcpy(&used, bytes + k * stride + offsetof(nvmlProcessInfo_t, usedGpuMemory),
                sizeof(used));
    out.push_back({pid, used == NVML_VALUE_NOT_AVAILABLE ? 0 : static_cast<Bytes>(used)});
  }
  return out;
}

std::map<unsigned, std::int64_t> IntegrateSamples(std::vector<UtilSample> samples,
                                                  SampleCursor& cursor, Micros previous_read_us,
                                                  Micros max_period_us) {
  std::map<unsigned, std::int64_t> out;
  std::stable_sort(samples.begin(), samples.end(),
                   [](const UtilSample& a, const UtilSample& b) { return a.ts < b.ts; });
  std::optional<unsigned long long> previous = cursor.previous_sample_ts;
  std::optional<unsigned long long> group_ts;  // timestamp of the samples being integrated
  Micros period = 0;
  for (const UtilSample& s : samples) {
    if (cursor.last_seen_ts != 0 && s.ts <= cursor.last_seen_ts) {
      continue;  // already counted (NVML returns only newer samples; guard anyway)
    }
    if (!group_ts || s.ts != *group_ts) {
      if (group_ts) previous = group_ts;
      group_ts = s.ts;
      // Samples sharing a timestamp (one per process) share the period that ends there.
      const Micros from = previous ? static_cast<Micros>(*previous) : previous_read_us;
      period = Clamp(static_cast<Micros>(s.ts) - from, max_period_us);
    }
    out[s.key] += std::llround(s.percent * static_cast<double>(period));
  }
  if (group_ts) {
    cursor.previous_sample_ts = group_ts;
    cursor.last_seen_ts = std::max(cursor.last_seen_ts, *group_ts);
  }
  return out;
}

namespace {
// A timestamp moved by `by` µs, floored at 0 (a timeline before the epoch has no samples).
unsigned long long Moved(unsigned long long ts, Micros by) {
  const Micros moved = static_cast<Micros>(ts) + by;
  return moved > 0 ? static_cast<unsigned long long>(moved) : 0;
}
}  // namespace

void ShiftCursor(SampleCursor& cursor, Micros step_us) {
  // last_seen_ts stays non-zero: 0 would mean "nothing seen yet" (ask NVML for everything).
  if (cursor.last_seen_ts != 0) {
    cursor.last_seen_ts = std::max(1ull, Moved(cursor.last_seen_ts, step_us));
  }
  if (cursor.previous_sample_ts) {
    cursor.previous_sample_ts = Moved(*cursor.previous_sample_ts, step_us);
  }
}

unsigned long long QueryTimestamp(const SampleCursor& shifted, const WallStep& step) {
  if (shifted.last_seen_ts == 0 || step.step_us <= 0) return shifted.last_seen_ts;
  return Moved(shifted.last_seen_ts, -step.step_us);
}

void PlaceSamples(std::vector<UtilSample>& samples, SampleCursor& cursor, const WallStep& step) {
  // Normally every sample is newer than all counted ones: the search runs only after a step back.
  unsigned long long newest_counted = 0;
  for (unsigned long long ts : cursor.counted_ts) newest_counted = std::max(newest_counted, ts);
  auto counted = [&](unsigned long long ts) {
    const auto& seen = cursor.counted_ts;
    return ts <= newest_counted && std::find(seen.begin(), seen.end(), ts) != seen.end();
  };
  const Micros since_new = step.previous_read_us + step.step_us;  // the previous read, new timeline
  const Micros old_last_seen = cursor.last_seen_ts == 0
                                   ? std::numeric_limits<Micros>::min()
                                   : static_cast<Micros>(cursor.last_seen_ts) - step.step_us;
  std::vector<UtilSample> placed;
  std::vector<unsigned long long> raw;  // NVML's timestamps of the placed samples
  for (UtilSample s : samples) {
    const Micros ts = static_cast<Micros>(s.ts);
    if (counted(s.ts)) continue;
    const bool current = ts <= step.read_us && (step.step_us == 0 || ts > since_new);
    if (!current) {
      // Across a step, one taken before it and not counted yet moves with the clock.
      if (step.step_us == 0 || ts <= old_last_seen || ts > step.read_us - step.step_us) continue;
      s.ts = Moved(s.ts, step.step_us);
    }
    raw.push_back(static_cast<unsigned long long>(ts));  // NVML's own, before any move
    placed.push_back(s);
  }
  std::sort(raw.begin(), raw.end());
  raw.erase(std::unique(raw.begin(), raw.end()), raw.end());
  for (unsigned long long ts : raw) {
    if (counted(ts)) continue;
    cursor.counted_ts.push_back(ts);
    if (cursor.counted_ts.size() > kCountedKept) cursor.counted_ts.pop_front();
  }
  samples = std::move(placed);
}

}  // namespace gpuledger::nvml
