#include "agent/collector.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "attribution/attribute.h"

namespace gpuledger::agent {
namespace {

using prometheus::ExpositionWriter;
using prometheus::HistogramData;
using prometheus::Label;
using prometheus::MetricType;

HistogramData Buckets(std::vector<double> bounds) {
  HistogramData h;
  h.counts.assign(bounds.size() + 1, 0);
  h.upper_bounds = std::move(bounds);
  return h;
}

void Observe(HistogramData& h, double v) {
  auto it = std::lower_bound(h.upper_bounds.begin(), h.upper_bounds.end(), v);
  ++h.counts[static_cast<std::size_t>(it - h.upper_bounds.begin())];
  h.sum += v;
}

// Distributions for rightsizing, observed once per cycle. Few buckets, each a decision
// boundary, to keep a (container, GPU) at 24 series (docs/agent.md): compute share steps are
// MIG compute slices (sevenths; 1g..4g, and 5% for "nearly idle"); memory steps are MIG memory
// slices, eighths of the card (1g = 1/8, 2g = 2/8, 3g and 4g = 4/8 of the GPU's memory), in
// bytes of the GPU the container runs on. Above 4/7 of the compute or half the memory only a
// whole GPU fits, which +Inf says.
HistogramData ComputeShareBuckets() { return Buckets({0.05, 1.0 / 7, 2.0 / 7, 3.0 / 7, 4.0 / 7}); }
HistogramData MemoryBuckets(Bytes card_bytes) {
  std::vector<double> b;
  for (double eighths : {1.0, 2.0, 4.0})
    b.push_back(std::floor(static_cast<double>(card_bytes) * eighths / 8));
  return Buckets(b);
}

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

Collector::Collector(CollectorOptions options, sources::GpuSource& gpus, procfs::ProcSource& procs,
                     kubelet::PodResourcesClient* kubelet, cri::RuntimeClient* runtime,
                     const Clock& clock)
    : options_(std::move(options)),
      gpus_(gpus),
      procs_(procs),
      kubelet_(kubelet),
      runtime_(runtime),
      clock_(clock),
      findings_(options_.policy, options_.node, options_.series_ttl_us) {
  counters_.cycle_seconds =
      Buckets({0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5});
  counters_.started_us = clock_.Now().wall_us;
  // Every kind the agent detects has its counter from the start (0 is an answer; absent is not).
  for (int k = 0; k < kFindingKinds; ++k) {
    const auto kind = static_cast<FindingKind>(k);
    if (!IsAdmissionKind(kind) && kind != FindingKind::kIdleAllocation &&
        options_.policy.Enabled(kind))
      counters_.findings_opened[kind] = 0;
  }
}

void Collector::CountFault(const std::string& source, const std::string& code) {
  pending_faults_.emplace_back(source, code);
}

void Collector::SetSourceUp(const std::string& source, bool up) { pending_up_[source] = up; }

void Collector::RefreshKube(Micros now_mono, bool force) {
  if (kubelet_ == nullptr && runtime_ == nullptr) return;
  if (!force && kube_refreshed_mono_us_ &&
      now_mono - *kube_refreshed_mono_us_ < options_.kube_refresh_us)
    return;
  kube_refreshed_mono_us_ = now_mono;
  // Each source keeps its last good view when it fails: a kubelet restart must not turn every
  // container into an unallocated user for ten seconds.
  if (kubelet_ != nullptr) {
    auto grants = kubelet_->List();
    SetSourceUp("kubelet", grants.ok());
    if (grants.ok()) {
      kube_.grants = std::move(*grants);
      kube_.present = true;
      auto alloc = kubelet_->GetAllocatableResources();
      if (alloc.ok()) kube_.allocatable = std::move(*alloc);
    } else {
      CountFault("kubelet",
                 grants.error().code == ErrorCode::kUnavailable ? "unavailable" : "error");
    }
  }
  if (runtime_ != nullptr) {
    auto sandboxes = runtime_->ListPodSandbox();
    auto containers = sandboxes.ok() ? runtime_->ListContainers()
                                     : Result<std::vector<cri::Container>>(sandboxes.error());
    SetSourceUp("cri", sandboxes.ok() && containers.ok());
    if (sandboxes.ok() && containers.ok()) {
      kube_.sandboxes = std::move(*sandboxes);
      kube_.containers = std::move(*containers);
      kube_.Reindex();
    } else {
      CountFault("cri", "unavailable");
    }
  }
}

void Collector::Cycle() {
  const auto started = std::chrono::steady_clock::now();
  const ClockReading clock = clock_.Now();
  const Micros now_mono = clock.mono_us;
  auto reading = gpus_.Read();
  SetSourceUp("nvml", reading.ok());
  if (!reading.ok()) {
    // A stale (hung) or broken driver: nothing measured this cycle; the time shows up as
    // unmetered downstream. Keep serving what we had.
    CountFault("nvml", reading.error().message.find("TIMEOUT") != std::string::npos
                           ? "TIMEOUT"
                           : "unavailable");
  } else {
    for (const auto& f : reading->faults) CountFault(f.source, f.code);
    if (reading->gpus.empty() && !reading->faults.empty()) SetSourceUp("nvml", false);
  }
  RefreshKube(now_mono, false);

  std::vector<DeviceUsage> usage;
  JoinStats join;
  if (reading.ok() && reading->end_us > reading->start_us) {
    std::map<int, procfs::ProcessIdentity> identities;
    for (const auto& p : reading->processes) {
      if (identities.count(p.pid)) continue;
      auto id = procs_.Inspect(p.pid);
      if (id.ok()) identities.emplace(p.pid, std::move(*id));
    }
    procs_.EndCycle();
    JoinStats stats;
    NodeSnapshot snap = BuildSnapshot(options_.node, *reading, kube_, identities, &stats);
    if (stats.unknown_containers > 0) {
      // A container started since the last refresh: refresh now and rebuild, so its first
      // cycle is not booked to an unresolved consumer.
      RefreshKube(now_mono, true);
      stats = JoinStats{};
      snap = BuildSnapshot(options_.node, *reading, kube_, identities, &stats);
    }
    join.unknown_containers += stats.unknown_containers;
    join.vanished_processes += stats.vanished_processes;
    usage = attribution::Attribute(snap);
    for (const auto& u : usage) {
      // Conservation is an invariant of attribution: a violation is a bug, loudly.
      Status st = attribution::CheckConservation(u);
      if (!st.ok()) {
        fmt::print(stderr, "gpuledger agent: BUG: {}\n", st.error().message);
        std::abort();
      }
    }
    findings_.Update(guardrails::Observe(snap, usage, options_.policy, kube_.present),
                     snap.start_us, snap.end_us);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::lock_guard lock(mu_);
  for (const auto& key : pending_faults_) counters_.source_errors[key] += 1;
  for (const auto& [source, up] : pending_up_) counters_.source_up[source] = up;
  pending_faults_.clear();
  pending_up_.clear();
  counters_.join_totals.unknown_containers += join.unknown_containers;
  counters_.join_totals.vanished_processes += join.vanished_processes;
  counters_.findings = findings_.Current();
  for (const auto& [kind, n] : findings_.opened_total()) counters_.findings_opened[kind] = n;
  // The peaks' hour, by the agent's clock: the cycle's interval ends now, so an end on the hour
  // closes the hour before (as the ledger books intervals). Entries of containers seen in
  // neither this hour nor the one before are of no hour the exposition names: dropped.
  counters_.hour_us = HourStart(clock.wall_us - 1);
  std::erase_if(counters_.peaks, [&](const auto& kv) {
    const Micros h = kv.second.hour_us;
    return h != counters_.hour_us && h != counters_.hour_us - kMicrosPerHour;
  });
  if (reading.ok()) {
    if (reading->wall_step_us != 0) ++counters_.clock_jumps;
    // The hour the interval lies in: one that ends on the hour belongs to the hour before.
    Account(usage, *reading, now_mono, (reading->end_us - 1) / kMicrosPerHour, counters_.hour_us);
    for (const auto& g : reading->instant) {
      DeviceSeries& d = counters_.devices[g.device.value];
      d.memory_used_bytes = g.memory_used_bytes;
      d.memory_total_bytes = g.memory_total_bytes;
      d.power_mw = g.power_mw;
      d.last_seen_us = now_mono;
    }
  }
  Observe(counters_.cycle_seconds, seconds);
  counters_.at_us = clock.wall_us;
  counters_.at_mono_us = clock.mono_us;
  ++counters_.cycles;
}

void Collector::Account(const std::vector<DeviceUsage>& usage, const sources::GpuReading& reading,
                        Micros now_mono, std::int64_t wall_hour, Micros peak_hour_us) {
  for (const MigInstance& m : reading.mig_instances) {
    DeviceSeries& d = counters_.devices[m.uuid.value];
    d.parent_uuid = m.parent.value;
    d.mig_profile = m.profile;
    d.sharing = "mig";
    d.last_seen_us = now_mono;
  }
  for (const DeviceUsage& u : usage) {
    DeviceSeries& d = counters_.devices[u.gpu.value];
    d.model = u.model;
    d.sharing = std::string(ToString(u.sharing));
    const Micros dt = u.duration_us();
    d.metered_us += dt;
    d.busy_us += u.busy_us;
    d.idle_us += u.idle_us;
    d.unattributed_us += u.unattributed_us;
    d.energy_mj += u.energy_mj;
    d.unattributed_memory_byte_us +=
        static_cast<unsigned __int128>(std::max<Bytes>(0, u.unattributed_memory_bytes)) *
        static_cast<std::uint64_t>(dt);
    d.last_seen_us = now_mono;
    for (auto& [uuid, series] : counters_.devices)
      if (series.parent_uuid == u.gpu.value) series.model = u.model;
    for (const ConsumerUsage& c : u.consumers) {
      auto [it, fresh] = counters_.containers.try_emplace(ContainerKey{c.consumer, u.gpu.value});
      ContainerSeries& s = it->second;
      if (fresh) {
        s.compute_share = ComputeShareBuckets();
        s.memory_usage = MemoryBuckets(u.memory_total_bytes);
      }
      s.allocated_ppd_us += static_cast<unsigned __int128>(std::max<SharePpd>(0, c.allocated_ppd)) *
                            static_cast<std::uint64_t>(dt);
      s.compute_us += c.compute_us;
      s.memory_byte_us += static_cast<unsigned __int128>(std::max<Bytes>(0, c.memory_bytes)) *
                          static_cast<std::uint64_t>(dt);
      s.energy_mj += c.energy_mj;
      s.activity += c.activity;
      s.memory_used_bytes = c.memory_bytes;
      HourPeaks& peak = counters_.peaks[ContainerKey{c.consumer, u.gpu.value}];
      if (peak.hour_us != peak_hour_us) {
        peak.earlier_hour_us = peak.hour_us;
        peak.earlier_peak_bytes = peak.peak_bytes;
        peak.hour_us = peak_hour_us;
        peak.peak_bytes = 0;
      }
      peak.peak_bytes = std::max(peak.peak_bytes, c.memory_bytes);
      // The sources say how every cycle of the current wall-clock hour was obtained (the worst
      // quality, the union of rules), not only the last one: the hour's row then explains all
      // of its figures, and the label changes at most a few times an hour (no series churn).
      if (s.hour != wall_hour) {
        s.hour = wall_hour;
        s.compute_quality = s.activity_quality = Quality::kNone;
        s.compute_rule.clear();
        s.activity_rule.clear();
      }
      s.compute_quality = Combine(s.compute_quality, c.compute_quality);
      s.compute_rule = MergeRules(s.compute_rule, c.compute_rule);
      s.activity_quality = Combine(s.activity_quality, c.activity_quality);
      s.activity_rule = MergeRules(s.activity_rule, c.activity_rule);
      s.memory_quality = c.memory_quality;
      s.share_source = c.share_source;
      if (dt > 0) {
        Observe(s.compute_share, static_cast<double>(c.compute_us) / static_cast<double>(dt));
        Observe(s.memory_usage, static_cast<double>(s.memory_used_bytes));
      }
      s.last_seen_us = now_mono;
    }
  }
  // Containers gone for longer than the TTL stop being exported (their totals were scraped).
  std::erase_if(counters_.containers, [&](const auto& kv) {
    return now_mono - kv.second.last_seen_us > options_.series_ttl_us;
  });
}

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
    std::array<Label, 9> all{l[0],
                             l[1],
                             l[2],
                             l[3],
                             l[4],
                             Label{"compute_source", compute},
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

std::shared_ptr<const Rendered> Collector::Exposition() const {
  std::lock_guard render_lock(render_mu_);
  std::lock_guard lock(mu_);
  if (!rendered_ || rendered_->cycle != counters_.cycles || counters_.cycles == 0)
    rendered_ = std::make_shared<const Rendered>(
        Rendered{Render(counters_, options_.node), counters_.at_us, counters_.cycles});
  return rendered_;
}

bool Collector::Healthy(Micros max_age_us) const {
  Micros last;
  std::uint64_t cycles;
  {
    std::lock_guard lock(mu_);
    last = counters_.at_mono_us;
    cycles = counters_.cycles;
  }
  return cycles != 0 && clock_.Now().mono_us - last <= max_age_us;
}

}  // namespace gpuledger::agent
