// The NVML source's GPM metrics (Hopper and later): support at discovery, one sample pair per
// unit (GPU or GPU instance) alternating between reads, and the pool that frees their buffers.
#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <string>

#include "sources/nvml/nvml_source_impl.h"

namespace gpuledger::nvml::impl {

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

}  // namespace gpuledger::nvml::impl
