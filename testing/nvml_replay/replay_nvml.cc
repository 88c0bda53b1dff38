#include "replay_nvml.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace gpuledger::testing {
namespace {

struct GpmSampleBuffer {
  Micros at_us = -1;  // when it was filled; -1: never
};

struct Replay {
  const NvmlCapture* capture = nullptr;
  const Clock* clock = nullptr;
};
Replay g_replay;
int g_device_tag = 0;  // its address is the one device handle
nvmlDevice_t Handle() { return reinterpret_cast<nvmlDevice_t>(&g_device_tag); }

Micros Now() { return g_replay.clock->Now().wall_us; }

// The reads made at or before `t`.
std::vector<const CapturedRead*> ReadsUntil(Micros t) {
  std::vector<const CapturedRead*> out;
  for (const CapturedRead& r : g_replay.capture->reads) {
    if (r.at_us > t) break;
    out.push_back(&r);
  }
  return out;
}

const CapturedRead* Latest() {
  auto reads = ReadsUntil(Now());
  return reads.empty() ? nullptr : reads.back();
}

nvmlReturn_t CopyString(const std::string& s, char* out, unsigned length) {
  if (s.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, s.c_str(), s.size() + 1);
  return NVML_SUCCESS;
}

nvmlReturn_t CheckDevice(nvmlDevice_t device) {
  return device == Handle() ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

// Writes `items` through NVML's sizing protocol: *count is the capacity in, the number out.
template <typename T>
nvmlReturn_t Fill(const std::vector<T>& items, T* out, unsigned* count) {
  if (out == nullptr || *count < items.size()) {
    *count = static_cast<unsigned>(items.size());
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  std::copy(items.begin(), items.end(), out);
  *count = static_cast<unsigned>(items.size());
  return NVML_SUCCESS;
}

nvmlReturn_t ProcessList(nvmlDevice_t device, unsigned* count, nvmlProcessInfo_t* out, bool mps) {
  if (nvmlReturn_t r = CheckDevice(device); r != NVML_SUCCESS) return r;
  std::vector<nvmlProcessInfo_t> items;
  if (const CapturedRead* r = Latest()) {
    for (const CapturedProcess& p : mps ? r->mps : r->compute) {
      nvmlProcessInfo_t info{};
      info.pid = p.pid;
      info.usedGpuMemory = static_cast<unsigned long long>(p.used_bytes);
      info.gpuInstanceId = 0xFFFFFFFFu;
      info.computeInstanceId = 0xFFFFFFFFu;
      items.push_back(info);
    }
  }
  return Fill(items, out, count);
}

const char* MetricName(unsigned id) {
  switch (id) {
    case NVML_GPM_METRIC_GRAPHICS_UTIL:
      return "graphics_util";
    case NVML_GPM_METRIC_SM_UTIL:
      return "sm_util";
    case NVML_GPM_METRIC_SM_OCCUPANCY:
      return "sm_occupancy";
    case NVML_GPM_METRIC_ANY_TENSOR_UTIL:
      return "any_tensor_util";
    case NVML_GPM_METRIC_DRAM_BW_UTIL:
      return "dram_bw_util";
    default:
      return nullptr;
  }
}

// The captured metric averaged over (from, to], each read's value standing for the time since
// the read before it.
std::optional<double> MetricBetween(const char* name, Micros from, Micros to) {
  double weighted = 0;
  Micros covered = 0;
  const auto& reads = g_replay.capture->reads;
  for (std::size_t i = 1; i < reads.size(); ++i) {
    const Micros a = std::max(reads[i - 1].at_us, from), b = std::min(reads[i].at_us, to);
    auto it = reads[i].gpm.find(name);
    if (b <= a || it == reads[i].gpm.end()) continue;
    weighted += it->second * static_cast<double>(b - a);
    covered += b - a;
  }
  if (covered == 0) return std::nullopt;
  return weighted / static_cast<double>(covered);
}

}  // namespace

nvml::NvmlApi ReplayNvml(const NvmlCapture& capture, const Clock& clock) {
  g_replay = {&capture, &clock};
  nvml::NvmlApi api;
  api.init = [] { return NVML_SUCCESS; };
  api.shutdown = [] { return NVML_SUCCESS; };
  api.driver_version = [](char* out, unsigned n) {
    return CopyString(g_replay.capture->driver, out, n);
  };
  api.device_count = [](unsigned* c) {
    *c = 1;
    return NVML_SUCCESS;
  };
  api.handle_by_index = [](unsigned i, nvmlDevice_t* h) {
    if (i != 0) return NVML_ERROR_INVALID_ARGUMENT;
    *h = Handle();
    return NVML_SUCCESS;
  };
  api.uuid = [](nvmlDevice_t d, char* out, unsigned n) {
    if (nvmlReturn_t r = CheckDevice(d); r != NVML_SUCCESS) return r;
    return CopyString(g_replay.capture->uuid, out, n);
  };
  api.name = [](nvmlDevice_t d, char* out, unsigned n) {
    if (nvmlReturn_t r = CheckDevice(d); r != NVML_SUCCESS) return r;
    return CopyString(g_replay.capture->name, out, n);
  };
  api.memory_info = [](nvmlDevice_t d, nvmlMemory_t* m) {
    if (nvmlReturn_t r = CheckDevice(d); r != NVML_SUCCESS) return r;
    const auto total = static_cast<unsigned long long>(g_replay.capture->memory_total);
    const CapturedRead* r = Latest();
    const auto used = r == nullptr ? 0ull : static_cast<unsigned long long>(r->memory_used);
    *m = {total, total - used, used};
    return NVML_SUCCESS;
  };
  api.utilization_rates = [](nvmlDevice_t d, nvmlUtilization_t* u) {
    if (nvmlReturn_t r = CheckDevice(d); r != NVML_SUCCESS) return r;
    const CapturedRead* r = Latest();
    *u = r == nullptr ? nvmlUtilization_t{0, 0} : nvmlUtilization_t{r->util_gpu, r->util_memory};
    return NVML_SUCCESS;
  };
  api.samples = [](nvmlDevice_t d, nvmlSamplingType_t type, unsigned long long last_seen,
                   nvmlValueType_t* value_type, unsigned* count, nvmlSample_t* out) {
    if (nvmlReturn_t r = CheckDevice(d); r != NVML_SUCCESS) return r;
    if (type != NVML_GPU_UTILIZATION_SAMPLES) return NVML_ERROR_NOT_SUPPORTED;
    std::vector<nvmlSample_t> items;
    for (const CapturedRead* r : ReadsUntil(Now())) {
      for (const auto& [ts, value] : r->device_samples) {
        if (static_cast<unsigned long long>(ts) <= last_seen) continue;
        nvmlSample_t s{};
        s.timeStamp = static_cast<unsigned long long>(ts);
        s.sampleValue.uiVal = value;
        items.push_back(s);
      }
    }
    if (items.empty()) return NVML_ERROR_NOT_FOUND;
    *value_type = NVML_VALUE_TYPE_UNSIGNED_INT;
    return Fill(items, out, count);
  };
  api.process_utilization = [](nvmlDevice_t d, nvmlProcessUtilizationSample_t* out, unsigned* count,
                               unsigned long long last_seen) {
    if (nvmlReturn_t r = CheckDevice(d); r != NVML_SUCCESS) return r;
    std::vector<nvmlProcessUtilizationSample_t> items;
    for (const CapturedRead* r : ReadsUntil(Now())) {
      for (const CapturedProcessSample& s : r->process_samples) {
        if (static_cast<unsigned long long>(s.ts_us) <= last_seen) continue;
        items.push_back({s.pid, static_cast<unsigned long long>(s.ts_us), s.sm, s.mem, 0, 0});
      }
    }
    if (items.empty()) return NVML_ERROR_NOT_FOUND;
    return Fill(items, out, count);
  };
  api.compute_processes = [](nvmlDevice_t d, unsigned* count, nvmlProcessInfo_t* out) {
    return ProcessList(d, count, out, /*mps=*/false);
  };
  api.mps_compute_processes = [](nvmlDevice_t d, unsigned* count, nvmlProcessInfo_t* out) {
    return ProcessList(d, count, out, /*mps=*/true);
  };
  api.total_energy = [](nvmlDevice_t d, unsigned long long* e) {
    if (nvmlReturn_t r = CheckDevice(d); r != NVML_SUCCESS) return r;
    const CapturedRead* r = Latest();
    *e = static_cast<unsigned long long>(r == nullptr ? g_replay.capture->reads.front().energy_mj
                                                      : r->energy_mj);
    return NVML_SUCCESS;
  };
  api.power_usage = [](nvmlDevice_t d, unsigned* p) {
    if (nvmlReturn_t r = CheckDevice(d); r != NVML_SUCCESS) return r;
    const CapturedRead* r = Latest();
    *p = r == nullptr ? 0 : r->power_mw;
    return NVML_SUCCESS;
  };
  api.mig_mode = [](nvmlDevice_t d, unsigned* current, unsigned* pending) {
    if (nvmlReturn_t r = CheckDevice(d); r != NVML_SUCCESS) return r;
    *current = *pending = NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
  };
  api.gpm_query_device_support = [](nvmlDevice_t d, nvmlGpmSupport_t* s) {
    if (nvmlReturn_t r = CheckDevice(d); r != NVML_SUCCESS) return r;
    if (s->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    s->isSupportedDevice = g_replay.capture->gpm_supported ? 1 : 0;
    return NVML_SUCCESS;
  };
  api.gpm_sample_alloc = [](nvmlGpmSample_t* s) {
    *s = reinterpret_cast<nvmlGpmSample_t>(new GpmSampleBuffer);
    return NVML_SUCCESS;
  };
  api.gpm_sample_free = [](nvmlGpmSample_t s) {
    delete reinterpret_cast<GpmSampleBuffer*>(s);
    return NVML_SUCCESS;
  };
  api.gpm_sample_get = [](nvmlDevice_t d, nvmlGpmSample_t s) {
    if (nvmlReturn_t r = CheckDevice(d); r != NVML_SUCCESS) return r;
    reinterpret_cast<GpmSampleBuffer*>(s)->at_us = Now();
    return NVML_SUCCESS;
  };
  api.gpm_metrics_get = [](nvmlGpmMetricsGet_t* m) {
    if (m->version != NVML_GPM_METRICS_GET_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    const auto* a = reinterpret_cast<const GpmSampleBuffer*>(m->sample1);
    const auto* b = reinterpret_cast<const GpmSampleBuffer*>(m->sample2);
    if (a == nullptr || b == nullptr || a->at_us < 0 || b->at_us <= a->at_us)
      return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned i = 0; i < m->numMetrics && i < NVML_GPM_METRIC_MAX; ++i) {
      nvmlGpmMetric_t& metric = m->metrics[i];
      const char* name = MetricName(metric.metricId);
      auto value = name == nullptr ? std::nullopt : MetricBetween(name, a->at_us, b->at_us);
      metric.nvmlReturn = value ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
      metric.value = value.value_or(0);
    }
    return NVML_SUCCESS;
  };
  return api;
}

}  // namespace gpuledger::testing
