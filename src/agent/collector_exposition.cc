// The agent's exposition: Collector::Render draws the counters of the last cycle (and the
// guardrail findings) as Prometheus text, on demand, at most once per cycle (collector.h says
// why); docs/agent.md lists every series.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "agent/collector.h"
#include "model/compute_band.h"

namespace gpuledger::agent {
namespace {

using prometheus::ExpositionWriter;
using prometheus::Label;
using prometheus::MetricType;

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
  w.Family("gpuledger_finding", "An open guardrail finding (value 1; docs/guardrails.md).",
           MetricType::kGauge);
  for (const Finding& f : c.findings) {
    if (f.resolved_us) continue;
    auto k = key(f);
    std::array<Label, 6> l{k[0], Label{"severity", ToString(f.severity)}, k[1], k[2], k[3], k[4]};
    w.Sample("gpuledger_finding", std::span<const Label>(l), 1);
  }
  w.Family("gpuledger_finding_evidence_info",
           "What a finding rests on: PIDs, the grant, the environment, the figure against the "
           "limit (value 1).",
           MetricType::kGauge);
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
    w.Sample("gpuledger_finding_evidence_info", std::span<const Label>(l), 1);
  }
  auto stamp = [&](const char* name, const char* help, auto when) {
    w.Family(name, help, MetricType::kGauge);
    for (const Finding& f : c.findings) {
      std::optional<Micros> t = when(f);
      if (!t) continue;
      auto k = key(f);
      w.Sample(name, std::span<const Label>(k), static_cast<double>(*t) / 1e6);
    }
  };
  stamp("gpuledger_finding_first_seen_timestamp_seconds", "When the finding's condition began.",
        [](const Finding& f) { return std::optional<Micros>(f.first_seen_us); });
  stamp("gpuledger_finding_last_seen_timestamp_seconds", "When the condition was last seen.",
        [](const Finding& f) { return std::optional<Micros>(f.last_seen_us); });
  stamp("gpuledger_finding_resolved_timestamp_seconds",
        "When a resolved finding's condition ended (its last sight).",
        [](const Finding& f) { return f.resolved_us; });
  w.Family("gpuledger_findings_total", "Findings opened since the agent started, by kind.",
           MetricType::kCounter);
  for (const auto& [kind, n] : c.findings_opened)
    w.Sample("gpuledger_findings_total", {{"kind", ToString(kind)}}, static_cast<double>(n));
}

std::string Collector::Render(const Counters& c, const std::string& node) {
  ExpositionWriter w;
  w.Family("gpuledger_device_info", "A GPU or MIG instance on this node (value 1).",
           MetricType::kGauge);
  for (const auto& [uuid, d] : c.devices)
    w.Sample("gpuledger_device_info",
             {{"gpu_uuid", uuid},
              {"gpu_model", d.model},
              {"node", node},
              {"parent_uuid", d.parent_uuid},
              {"mig_profile", d.mig_profile},
              {"sharing_mode", d.sharing}},
             1);
  // Integer totals as float64 base units (common/counter_units.h).
  auto device_counter = [&](const char* name, const char* help, auto value) {
    w.Family(name, help, MetricType::kCounter);
    for (const auto& [uuid, d] : c.devices)
      if (d.parent_uuid.empty()) w.Sample(name, {{"gpu_uuid", uuid}}, value(d));
  };
  auto seconds = [](GpuMicros DeviceSeries::*f) {
    return [f](const DeviceSeries& d) { return ToBaseUnit(d.*f, CounterScale::kMicrosPerSecond); };
  };
  device_counter("gpuledger_device_metered_seconds_total",
                 "Seconds the agent measured this physical GPU.",
                 seconds(&DeviceSeries::metered_us));
  device_counter("gpuledger_device_busy_seconds_total",
                 "Seconds any kernel ran on this physical GPU.", seconds(&DeviceSeries::busy_us));
  device_counter("gpuledger_device_idle_seconds_total",
                 "Metered seconds this physical GPU was not busy.",
                 seconds(&DeviceSeries::idle_us));
  device_counter("gpuledger_device_unattributed_seconds_total",
                 "Busy seconds no known process explains.",
                 seconds(&DeviceSeries::unattributed_us));
  device_counter(
      "gpuledger_device_energy_joules_total", "Energy this physical GPU used while metered.",
      [](const DeviceSeries& d) { return ToBaseUnit(d.energy_mj, CounterScale::kMilliPerUnit); });
  device_counter("gpuledger_device_unattributed_memory_byte_seconds_total",
                 "GPU memory in use that no known process explains, integrated over time.",
                 [](const DeviceSeries& d) {
                   return ToBaseUnit(WholeKibSeconds(d.unattributed_memory_byte_us),
                                     CounterScale::kKibPerByte);
                 });
  auto device_gauge = [&](const char* name, const char* help, auto value) {
    w.Family(name, help, MetricType::kGauge);
    for (const auto& [uuid, d] : c.devices)
      if (d.parent_uuid.empty()) w.Sample(name, {{"gpu_uuid", uuid}}, value(d));
  };
  device_gauge("gpuledger_device_memory_used_bytes", "GPU memory in use.",
               [](const DeviceSeries& d) { return static_cast<double>(d.memory_used_bytes); });
  device_gauge("gpuledger_device_memory_total_bytes", "GPU memory in all.",
               [](const DeviceSeries& d) { return static_cast<double>(d.memory_total_bytes); });
  device_gauge("gpuledger_device_power_watts", "GPU power draw at the last cycle.",
               [](const DeviceSeries& d) { return static_cast<double>(d.power_mw) / 1000.0; });

  auto labels = [&](const ContainerKey& k) {
    return std::array<Label, 5>{Label{"namespace", k.ref.namespace_name}, Label{"pod", k.ref.pod},
                                Label{"pod_uid", k.ref.pod_uid.value},
                                Label{"container", k.ref.container}, Label{"gpu_uuid", k.gpu}};
  };
  auto container_metric = [&](const char* name, const char* help, MetricType type, auto value) {
    w.Family(name, help, type);
    for (const auto& [k, s] : c.containers) {
      auto l = labels(k);
      w.Sample(name, std::span<const Label>(l), value(s));
    }
  };
  container_metric("gpuledger_container_allocated_gpu_seconds_total",
                   "GPU-seconds of the physical GPU granted to the container.",
                   MetricType::kCounter, [](const ContainerSeries& s) {
                     return ToBaseUnit(static_cast<std::int64_t>(s.allocated_ppd_us / kWholeGpu),
                                       CounterScale::kMicrosPerSecond);
                   });
  container_metric("gpuledger_container_compute_gpu_seconds_total",
                   "GPU-seconds of the physical GPU the container's kernels used.",
                   MetricType::kCounter, [](const ContainerSeries& s) {
                     return ToBaseUnit(s.compute_us, CounterScale::kMicrosPerSecond);
                   });
  container_metric("gpuledger_container_memory_byte_seconds_total",
                   "GPU memory held by the container, integrated over time (whole KiB-seconds).",
                   MetricType::kCounter, [](const ContainerSeries& s) {
                     return ToBaseUnit(WholeKibSeconds(s.memory_byte_us),
                                       CounterScale::kKibPerByte);
                   });
  container_metric("gpuledger_container_energy_joules_total",
                   "The container's share of the GPU's energy (split by busy time).",
                   MetricType::kCounter, [](const ContainerSeries& s) {
                     return ToBaseUnit(s.energy_mj, CounterScale::kMilliPerUnit);
                   });
  auto activity_seconds = [](GpuMicros Activity::*f) {
    return [f](const ContainerSeries& s) {
      return ToBaseUnit(s.activity.*f, CounterScale::kMicrosPerSecond);
    };
  };
  container_metric("gpuledger_container_sm_active_gpu_seconds_total",
                   "GPU-seconds of the physical GPU's SMs the container kept active (a warp "
                   "resident), as its activity source measured it (attribution_info).",
                   MetricType::kCounter, activity_seconds(&Activity::sm_active_us));
  container_metric("gpuledger_container_sm_occupancy_gpu_seconds_total",
                   "GPU-seconds of SM occupancy (resident warps over the SMs' maximum).",
                   MetricType::kCounter, activity_seconds(&Activity::sm_occupancy_us));
  container_metric("gpuledger_container_tensor_active_gpu_seconds_total",
                   "GPU-seconds any tensor pipe of the physical GPU was busy for the container.",
                   MetricType::kCounter, activity_seconds(&Activity::tensor_active_us));
  container_metric("gpuledger_container_dram_active_gpu_seconds_total",
                   "GPU-seconds of DRAM bandwidth (used over peak) the container drew.",
                   MetricType::kCounter, activity_seconds(&Activity::dram_active_us));
  container_metric(
      "gpuledger_container_memory_used_bytes", "GPU memory the container held in the last cycle.",
      MetricType::kGauge,
      [](const ContainerSeries& s) { return static_cast<double>(s.memory_used_bytes); });
  // Exact hourly peaks: the gauge above, sampled by scrapes, misses a spike between them.
  auto peak_gauge = [&](const char* name, const char* help, Micros hour_us) {
    w.Family(name, help, MetricType::kGauge);
    for (const auto& [k, p] : c.peaks) {
      const std::optional<Bytes> peak = p.PeakOf(hour_us);
      if (!peak) continue;
      auto l = labels(k);
      w.Sample(name, std::span<const Label>(l), static_cast<double>(*peak));
    }
  };
  peak_gauge("gpuledger_container_memory_peak_bytes",
             "The most GPU memory the container held at any cycle of the agent's current UTC "
             "hour (gpuledger_agent_hour_start_seconds).",
             c.hour_us);
  peak_gauge("gpuledger_container_memory_previous_hour_peak_bytes",
             "The most GPU memory the container held at any cycle of the UTC hour before the "
             "agent's current one (while it is known).",
             c.hour_us - kMicrosPerHour);
  w.Family("gpuledger_container_attribution_info",
           "How the container's figures were obtained (value 1).", MetricType::kGauge);
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
    w.Sample("gpuledger_container_attribution_info", std::span<const Label>(all), 1);
  }
  w.Family("gpuledger_container_compute_share",
           "Fraction of the physical GPU the container used, observed once per cycle.",
           MetricType::kHistogram);
  for (const auto& [k, s] : c.containers) {
    auto l = labels(k);
    w.Histogram("gpuledger_container_compute_share", std::span<const Label>(l), s.compute_share);
  }
  w.Family("gpuledger_container_memory_usage_bytes",
           "GPU memory the container held, observed once per cycle.", MetricType::kHistogram);
  for (const auto& [k, s] : c.containers) {
    auto l = labels(k);
    w.Histogram("gpuledger_container_memory_usage_bytes", std::span<const Label>(l),
                s.memory_usage);
  }
  RenderFindings(w, c);
  w.Family("gpuledger_agent_cycle_duration_seconds", "Time one collection cycle took.",
           MetricType::kHistogram);
  w.Histogram("gpuledger_agent_cycle_duration_seconds", {}, c.cycle_seconds);
  w.Family("gpuledger_agent_source_up", "Whether the source answered in the last cycle.",
           MetricType::kGauge);
  for (const auto& [source, up] : c.source_up)
    w.Sample("gpuledger_agent_source_up", {{"source", source}}, up ? 1 : 0);
  w.Family("gpuledger_agent_source_errors_total", "Errors from a source, by code.",
           MetricType::kCounter);
  for (const auto& [key, n] : c.source_errors)
    w.Sample("gpuledger_agent_source_errors_total", {{"source", key.first}, {"code", key.second}},
             n);
  w.Family("gpuledger_agent_unresolved_processes_total",
           "GPU processes not tied to a known container, by reason.", MetricType::kCounter);
  w.Sample("gpuledger_agent_unresolved_processes_total", {{"reason", "unknown_container"}},
           c.join_totals.unknown_containers);
  w.Sample("gpuledger_agent_unresolved_processes_total", {{"reason", "vanished"}},
           c.join_totals.vanished_processes);
  if (c.kernel_time) {
    // The kernel-time reader (issue 31): files read whole, refused, and tracers that are off.
    w.Family("gpuledger_agent_kernel_time_files_total",
             "Kernel-time files of in-process tracers, by what the agent made of them.",
             MetricType::kCounter);
    w.Sample("gpuledger_agent_kernel_time_files_total", {{"result", "read"}},
             static_cast<double>(c.kernel_time->files_read));
    w.Sample("gpuledger_agent_kernel_time_files_total", {{"result", "refused"}},
             static_cast<double>(c.kernel_time->files_refused));
    w.Sample("gpuledger_agent_kernel_time_files_total", {{"result", "tracer_off"}},
             static_cast<double>(c.kernel_time->tracers_off));
  }
  w.Family("gpuledger_agent_clock_jumps_total",
           "Steps of the wall clock beyond 1 s (NTP step, VM resume). Metered time is "
           "monotonic: a step is counted here, never metered.",
           MetricType::kCounter);
  w.Sample("gpuledger_agent_clock_jumps_total", static_cast<double>(c.clock_jumps));
  // Lets an ingester that watched since before this start count the counters from zero
  // instead of taking its first scrape as a baseline.
  w.Family("gpuledger_agent_start_time_seconds", "When this agent started (its counters began).",
           MetricType::kGauge);
  w.Sample("gpuledger_agent_start_time_seconds", static_cast<double>(c.started_us) / 1e6);
  w.Family("gpuledger_agent_hour_start_seconds",
           "Start of the agent's current UTC hour: the hour the memory peaks refer to.",
           MetricType::kGauge);
  if (c.hour_us >= 0)
    w.Sample("gpuledger_agent_hour_start_seconds", static_cast<double>(c.hour_us) / 1e6);
  w.Family("gpuledger_agent_last_cycle_timestamp_seconds", "When the last cycle ended.",
           MetricType::kGauge);
  w.Sample("gpuledger_agent_last_cycle_timestamp_seconds", static_cast<double>(c.at_us) / 1e6);
  return w.Take();
}

}  // namespace gpuledger::agent
