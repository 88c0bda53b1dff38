// The agent's exposition: Collector::Render draws the counters of the last cycle (and the
// guardrail findings) as Prometheus text, on demand, at most once per cycle (collector.h says
// why); docs/agent.md lists every series.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "agent/collector.h"
#include "model/compute_band.h"
#include "prometheus/metric_table.h"

namespace gpuledger::agent {
namespace {

using prometheus::ExpositionWriter;
using prometheus::Label;
using prometheus::MetricDef;

// Whole KiB-s of an exact byte-µs total.
std::int64_t WholeKibSeconds(unsigned __int128 byte_us) {
  return static_cast<std::int64_t>(byte_us /
                                   static_cast<unsigned __int128>(kByteMicrosPerKibSecond));
}

// "<quality>[:<rule>]", the form of attribution_info's *_source labels.
std::string SourceLabel(Quality quality, const std::string& rule) {
  std::string q(ToString(quality));
  return rule.empty() ? q : q + ":" + rule;
}

}  // namespace

// Guardrail findings (design section 6): gpuledger_finding is 1 while a finding is open (what
// alerts select); the other series carry what the server keeps of it, for open findings and
// those resolved within the series TTL, so a scraper that comes by less often than a finding
// lasts still sees it, and sees it end.
void Collector::RenderFindings(ExpositionWriter& w, const Counters& c) {
  auto key = [](const Finding& f) {
    return std::array<Label, 5>{
        Label{"kind", ToString(f.kind)}, Label{"namespace", f.subject.namespace_name},
        Label{"pod", f.subject.pod}, Label{"container", f.subject.container},
        Label{"gpu_uuid", f.gpu_uuid}};
  };
  w.Family(prometheus::kFinding);
  for (const Finding& f : c.findings) {
    if (f.resolved_us) continue;
    auto k = key(f);
    std::array<Label, 6> l{k[0], Label{"severity", ToString(f.severity)}, k[1], k[2], k[3], k[4]};
    w.Sample(prometheus::kFinding.name, std::span<const Label>(l), 1);
  }
  w.Family(prometheus::kFindingEvidenceInfo);
  for (const Finding& f : c.findings) {
    auto k = key(f);
    std::array<Label, 8> l{k[0],
                           Label{"severity", ToString(f.severity)},
                           k[1],
                           k[2],
                           Label{"pod_uid", f.subject.pod_uid.value},
                           k[3],
                           k[4],
                           Label{"evidence", f.evidence}};
    w.Sample(prometheus::kFindingEvidenceInfo.name, std::span<const Label>(l), 1);
  }
  auto stamp = [&](const MetricDef& def, auto when) {
    w.Family(def);
    for (const Finding& f : c.findings) {
      std::optional<Micros> t = when(f);
      if (!t) continue;
      auto k = key(f);
      w.Sample(def.name, std::span<const Label>(k), static_cast<double>(*t) / 1e6);
    }
  };
  stamp(prometheus::kFindingFirstSeenTimestampSeconds,
        [](const Finding& f) { return std::optional<Micros>(f.first_seen_us); });
  stamp(prometheus::kFindingLastSeenTimestampSeconds,
        [](const Finding& f) { return std::optional<Micros>(f.last_seen_us); });
  stamp(prometheus::kFindingResolvedTimestampSeconds,
        [](const Finding& f) { return f.resolved_us; });
  w.Family(prometheus::kFindingsTotal);
  for (const auto& [kind, n] : c.findings_opened)
    w.Sample(prometheus::kFindingsTotal.name, {{"kind", ToString(kind)}}, static_cast<double>(n));
}

void Collector::RenderDevices(ExpositionWriter& w, const Counters& c, const std::string& node) {
  w.Family(prometheus::kDeviceInfo);
  for (const auto& [uuid, d] : c.devices)
    w.Sample(prometheus::kDeviceInfo.name,
             {{"gpu_uuid", uuid},
              {"gpu_model", d.model},
              {"node", node},
              {"parent_uuid", d.parent_uuid},
              {"mig_profile", d.mig_profile},
              {"sharing_mode", d.sharing},
              {"layout", d.layout}},
             1);
  // Integer totals as float64 base units (common/counter_units.h).
  auto device_series = [&](const MetricDef& def, auto value) {
    w.Family(def);
    for (const auto& [uuid, d] : c.devices)
      if (d.parent_uuid.empty()) w.Sample(def.name, {{"gpu_uuid", uuid}}, value(d));
  };
  auto seconds = [](GpuMicros DeviceSeries::*f) {
    return [f](const DeviceSeries& d) { return ToBaseUnit(d.*f, CounterScale::kMicrosPerSecond); };
  };
  device_series(prometheus::kDeviceMeteredSecondsTotal, seconds(&DeviceSeries::metered_us));
  device_series(prometheus::kDeviceBusySecondsTotal, seconds(&DeviceSeries::busy_us));
  device_series(prometheus::kDeviceIdleSecondsTotal, seconds(&DeviceSeries::idle_us));
  device_series(prometheus::kDeviceUnattributedSecondsTotal,
                seconds(&DeviceSeries::unattributed_us));
  device_series(prometheus::kDeviceEnergyJoulesTotal, [](const DeviceSeries& d) {
    return ToBaseUnit(d.energy_mj, CounterScale::kMilliPerUnit);
  });
  device_series(prometheus::kDeviceUnattributedMemoryByteSecondsTotal, [](const DeviceSeries& d) {
    return ToBaseUnit(WholeKibSeconds(d.unattributed_memory_byte_us), CounterScale::kKibPerByte);
  });
  device_series(prometheus::kDeviceMemoryUsedBytes,
                [](const DeviceSeries& d) { return static_cast<double>(d.memory_used_bytes); });
  device_series(prometheus::kDeviceMemoryTotalBytes,
                [](const DeviceSeries& d) { return static_cast<double>(d.memory_total_bytes); });
  device_series(prometheus::kDevicePowerWatts,
                [](const DeviceSeries& d) { return static_cast<double>(d.power_mw) / 1000.0; });
}

void Collector::RenderContainers(ExpositionWriter& w, const Counters& c) {
  auto labels = [&](const ContainerKey& k) {
    return std::array<Label, 5>{Label{"namespace", k.ref.namespace_name}, Label{"pod", k.ref.pod},
                                Label{"pod_uid", k.ref.pod_uid.value},
                                Label{"container", k.ref.container}, Label{"gpu_uuid", k.gpu}};
  };
  auto container_metric = [&](const MetricDef& def, auto value) {
    w.Family(def);
    for (const auto& [k, s] : c.containers) {
      auto l = labels(k);
      w.Sample(def.name, std::span<const Label>(l), value(s));
    }
  };
  container_metric(prometheus::kContainerAllocatedGpuSecondsTotal, [](const ContainerSeries& s) {
    return ToBaseUnit(static_cast<std::int64_t>(s.allocated_ppd_us / kWholeGpu),
                      CounterScale::kMicrosPerSecond);
  });
  container_metric(prometheus::kContainerComputeGpuSecondsTotal, [](const ContainerSeries& s) {
    return ToBaseUnit(s.compute_us, CounterScale::kMicrosPerSecond);
  });
  container_metric(prometheus::kContainerMemoryByteSecondsTotal, [](const ContainerSeries& s) {
    return ToBaseUnit(WholeKibSeconds(s.memory_byte_us), CounterScale::kKibPerByte);
  });
  container_metric(prometheus::kContainerEnergyJoulesTotal, [](const ContainerSeries& s) {
    return ToBaseUnit(s.energy_mj, CounterScale::kMilliPerUnit);
  });
  auto activity_seconds = [](GpuMicros Activity::*f) {
    return [f](const ContainerSeries& s) {
      return ToBaseUnit(s.activity.*f, CounterScale::kMicrosPerSecond);
    };
  };
  container_metric(prometheus::kContainerSmActiveGpuSecondsTotal,
                   activity_seconds(&Activity::sm_active_us));
  container_metric(prometheus::kContainerSmOccupancyGpuSecondsTotal,
                   activity_seconds(&Activity::sm_occupancy_us));
  container_metric(prometheus::kContainerTensorActiveGpuSecondsTotal,
                   activity_seconds(&Activity::tensor_active_us));
  container_metric(prometheus::kContainerDramActiveGpuSecondsTotal,
                   activity_seconds(&Activity::dram_active_us));
  container_metric(prometheus::kContainerMemoryUsedBytes, [](const ContainerSeries& s) {
    return static_cast<double>(s.memory_used_bytes);
  });
  // Exact hourly peaks: the gauge above, sampled by scrapes, misses a spike between them.
  auto peak_gauge = [&](const MetricDef& def, Micros hour_us) {
    w.Family(def);
    for (const auto& [k, p] : c.peaks) {
      const std::optional<Bytes> peak = p.PeakOf(hour_us);
      if (!peak) continue;
      auto l = labels(k);
      w.Sample(def.name, std::span<const Label>(l), static_cast<double>(*peak));
    }
  };
  peak_gauge(prometheus::kContainerMemoryPeakBytes, c.hour_us);
  peak_gauge(prometheus::kContainerMemoryPreviousHourPeakBytes, c.hour_us - kMicrosPerHour);
  w.Family(prometheus::kContainerAttributionInfo);
  for (const auto& [k, s] : c.containers) {
    auto l = labels(k);
    // Labels are views: the texts live until the sample is written.
    const std::string compute = SourceLabel(s.compute_quality, s.compute_rule);
    const std::string memory = SourceLabel(s.memory_quality, "");
    const std::string activity = SourceLabel(s.activity_quality, s.activity_rule);
    // How far off the compute rule was measured to be on a real GPU (model/compute_band.h).
    const auto band = MeasuredComputeBandOfRules(s.compute_rule);
    const std::string compute_band = band ? fmt::format("{:g}", *band) : "unmeasured";
    std::array<Label, 10> all{l[0],
                              l[1],
                              l[2],
                              l[3],
                              l[4],
                              Label{"compute_source", compute},
                              Label{"compute_error_band", compute_band},
                              Label{"memory_source", memory},
                              Label{"activity_source", activity},
                              Label{"share_source", s.share_source}};
    w.Sample(prometheus::kContainerAttributionInfo.name, std::span<const Label>(all), 1);
  }
  w.Family(prometheus::kContainerComputeShare);
  for (const auto& [k, s] : c.containers) {
    auto l = labels(k);
    w.Histogram(prometheus::kContainerComputeShare.name, std::span<const Label>(l),
                s.compute_share);
  }
  w.Family(prometheus::kContainerMemoryUsageBytes);
  for (const auto& [k, s] : c.containers) {
    auto l = labels(k);
    w.Histogram(prometheus::kContainerMemoryUsageBytes.name, std::span<const Label>(l),
                s.memory_usage);
  }
}

void Collector::RenderAgent(ExpositionWriter& w, const Counters& c) {
  w.Family(prometheus::kAgentCycleDurationSeconds);
  w.Histogram(prometheus::kAgentCycleDurationSeconds.name, {}, c.cycle_seconds);
  w.Family(prometheus::kAgentSourceUp);
  for (const auto& [source, up] : c.source_up)
    w.Sample(prometheus::kAgentSourceUp.name, {{"source", source}}, up ? 1 : 0);
  w.Family(prometheus::kAgentSourceErrorsTotal);
  for (const auto& [key, n] : c.source_errors)
    w.Sample(prometheus::kAgentSourceErrorsTotal.name,
             {{"source", key.first}, {"code", key.second}}, n);
  const std::string_view unresolved = prometheus::kAgentUnresolvedProcessesTotal.name;
  w.Family(prometheus::kAgentUnresolvedProcessesTotal);
  w.Sample(unresolved, {{"reason", "unknown_container"}}, c.join_totals.unknown_containers);
  w.Sample(unresolved, {{"reason", "vanished"}}, c.join_totals.vanished_processes);
  if (c.kernel_time) {
    // The kernel-time reader (issue 31): files read whole, refused, and tracers that are off.
    const std::string_view files = prometheus::kAgentKernelTimeFilesTotal.name;
    w.Family(prometheus::kAgentKernelTimeFilesTotal);
    w.Sample(files, {{"result", "read"}}, static_cast<double>(c.kernel_time->files_read));
    w.Sample(files, {{"result", "refused"}}, static_cast<double>(c.kernel_time->files_refused));
    w.Sample(files, {{"result", "tracer_off"}}, static_cast<double>(c.kernel_time->tracers_off));
  }
  w.Family(prometheus::kAgentClockJumpsTotal);
  w.Sample(prometheus::kAgentClockJumpsTotal.name, static_cast<double>(c.clock_jumps));
  // Lets an ingester that watched since before this start count the counters from zero
  // instead of taking its first scrape as a baseline.
  w.Family(prometheus::kAgentStartTimeSeconds);
  w.Sample(prometheus::kAgentStartTimeSeconds.name, static_cast<double>(c.started_us) / 1e6);
  w.Family(prometheus::kAgentHourStartSeconds);
  if (c.hour_us >= 0)
    w.Sample(prometheus::kAgentHourStartSeconds.name, static_cast<double>(c.hour_us) / 1e6);
  w.Family(prometheus::kAgentLastCycleTimestampSeconds);
  w.Sample(prometheus::kAgentLastCycleTimestampSeconds.name, static_cast<double>(c.at_us) / 1e6);
}

std::string Collector::Render(const Counters& c, const std::string& node) {
  ExpositionWriter w;
  RenderDevices(w, c, node);
  RenderContainers(w, c);
  RenderFindings(w, c);
  RenderAgent(w, c);
  return w.Take();
}

}  // namespace gpuledger::agent
