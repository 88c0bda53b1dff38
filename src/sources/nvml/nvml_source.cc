#include "sources/nvml/nvml_source.h"

#include <algorithm>
#include <array>
#include <set>
#include <utility>

#include "sources/nvml/nvml_source_impl.h"

namespace gpuledger::nvml {
namespace impl {

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
    // Re-anchor every sample stream on the new timeline (WallStep in sample_stream.h). Committed
    // with the read, like everything else, so a read that times out re-anchors on the next try.
    for (auto& d : w.next.devices) {
      ShiftCursor(d.util_cursor, w.step.step_us);
      ShiftCursor(d.process_cursor, w.step.step_us);
      ShiftPresence(d.presence, w.step.step_us);
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

void NvmlGpuSource::ReadWholeGpu(Work& w, DeviceState& d, bool baseline,
                                 sources::GpuInstantaneous& instant, DeviceSignals& signal,
                                 std::vector<ProcessObservation>& processes) {
  nvmlDevice_t handle = d.handle;
  const GpuUuid& uuid = instant.device;
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
    auto integral = IntegrateSamples(*samples, d.util_cursor, w.previous_read_us, w.max_period_us);
    if (any || d.util_samples_seen) {
      busy = PercentMicrosToMicros(integral[0], w.interval_us);
    }
    d.util_samples_seen = d.util_samples_seen || any;
  }
  if (!busy && rates) {
    busy = Clamp((static_cast<std::int64_t>(rates->gpu) * w.interval_us + 50) / 100, w.interval_us);
  }
  signal.busy_us = busy;
  if (d.gpm) {
    GpmReadout gpm = ReadGpm(w, d, kGpmWholeGpu, d.uuid);
    if (gpm.activity) {
      signal.activity = gpm.activity;
      signal.activity_source = SignalSource::kGpm;
    }
  }

  // Per-process SM time from per-process samples, passing the previous lastSeenTimeStamp:
  // the device's windows split by presence where NVML gives device samples (presence_split.h),
  // else each sample x its period.
  std::optional<std::map<unsigned, std::int64_t>> per_pid;
  if (auto process_samples = ReadProcessSamples(w, d)) {
    PlaceSamples(*process_samples, d.process_cursor, w.step);
    // Integrating also moves the stream's cursor, which the presence split needs as well.
    auto by_period =
        IntegrateSamples(*process_samples, d.process_cursor, w.previous_read_us, w.max_period_us);
    if (samples) {
      per_pid = SplitByPresence(d.presence, std::move(*samples), std::move(*process_samples),
                                w.previous_read_us, w.max_period_us);
    } else {
      per_pid = std::move(by_period);
    }
  }
  std::vector<ProcessEntry> entries;
  ListProcesses(w, d, handle, d.uuid, false, entries);
  std::set<unsigned> listed;
  for (const auto& e : entries) {
    listed.insert(e.pid);
    ProcessObservation p;
    p.pid = static_cast<int>(e.pid);
    p.device = uuid;
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
        p.device = uuid;
        p.sm_busy_us = PercentMicrosToMicros(percent_us, w.interval_us);
        processes.push_back(std::move(p));
      }
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
    ReadWholeGpu(w, d, baseline, instant, signal, processes);
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

}  // namespace impl

using impl::Fault;
using impl::NvmlGpuSource;

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
  // The count now, so the start-up line names the GPUs before the first read does.
  unsigned count = 0;
  if (api.device_count != nullptr) {
    auto box = std::make_shared<std::pair<unsigned, nvmlReturn_t>>(0, NVML_ERROR_UNKNOWN);
    auto fn = api.device_count;
    if (watchdog->Run("nvmlDeviceGetCount_v2()", [box, fn] { box->second = fn(&box->first); }) ==
            Watchdog::Outcome::kDone &&
        box->second == NVML_SUCCESS) {
      count = box->first;
    }
  }
  return std::make_unique<NvmlGpuSource>(std::move(api), options, clock, std::move(watchdog),
                                         std::move(driver), count);
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
}  // namespace gpuledger::nvml
