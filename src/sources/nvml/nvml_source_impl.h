#pragma once
// The NVML source's internals, shared by its files and used nowhere else: what it remembers
// between reads (State), one read in progress (Work) and the class. nvml_source.cc runs a read
// and reads a device; nvml_processes.cc the sample streams and process lists; nvml_mig.cc the
// MIG instances; nvml_gpm.cc GPM. Everything here lives in namespace nvml::impl.

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sources/nvml/nvml_decode.h"
#include "sources/nvml/nvml_source.h"
#include "sources/nvml/presence_split.h"
#include "sources/nvml/sample_stream.h"
#include "sources/nvml/watchdog.h"

namespace gpuledger::nvml::impl {

using sources::GpuReading;
using sources::SourceFault;

constexpr const char* kSource = "nvml";
constexpr unsigned char kSentinel = 0xA5;
constexpr unsigned kGrowMargin = 8;  // entries added to the count NVML asks for
constexpr int kMaxGrowAttempts = 4;  // INSUFFICIENT_SIZE retries per call
constexpr unsigned kMaxEntries = 1u << 16;

inline SourceFault Fault(std::string code, std::string detail) {
  return {kSource, std::move(code), std::move(detail)};
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
  PresenceState presence;            // the device's windows split by per-process presence
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
                    std::to_string(described_count_) + (described_count_ == 1 ? " GPU" : " GPUs");
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
  // A GPU without MIG: its busy time and activity into `instant` and `signal` (whose device
  // names it), its processes appended.
  void ReadWholeGpu(Work& w, DeviceState& d, bool baseline, sources::GpuInstantaneous& instant,
                    DeviceSignals& signal, std::vector<ProcessObservation>& processes);
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

}  // namespace gpuledger::nvml::impl
