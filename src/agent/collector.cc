#include "agent/collector.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "attribution/attribute.h"
#include "model/gpu_layout.h"

namespace gpuledger::agent {
namespace {

using prometheus::HistogramData;

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

}  // namespace

Collector::Collector(CollectorOptions options, sources::GpuSource& gpus, procfs::ProcSource& procs,
                     kubelet::PodResourcesClient* kubelet, cri::RuntimeClient* runtime,
                     const Clock& clock, kerneltime::KernelTimeReader* kernel_time)
    : options_(std::move(options)),
      gpus_(gpus),
      procs_(procs),
      kubelet_(kubelet),
      runtime_(runtime),
      clock_(clock),
      kernel_time_(kernel_time),
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
    auto lists = runtime_->Lists();
    SetSourceUp("cri", lists.ok());
    if (lists.ok()) {
      kube_.sandboxes = std::move(lists->sandboxes);
      kube_.containers = std::move(lists->containers);
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
  std::map<std::string, std::string> layouts;  // physical GPU -> DescribeLayout
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
    for (const PhysicalGpu& gpu : snap.gpus)
      layouts[gpu.uuid.value] = DescribeLayout(gpu, snap.mig_instances);
    // A claim NVML contradicts (an open kernel-time-mismatch) is not believed: attribution
    // splits that consumer's share by the NVML estimate, and the detector below still sees the
    // claim, so the finding stays open while the lie goes on.
    std::vector<std::pair<std::size_t, GpuMicros>> withheld;
    if (kernel_time_ != nullptr) {
      kernel_time_->Annotate(snap.processes);
      std::set<std::pair<ConsumerRef, std::string>> doubted;
      for (const Finding& f : findings_.Current())
        if (f.kind == FindingKind::kKernelTimeMismatch && !f.resolved_us)
          doubted.insert({f.subject, f.gpu_uuid});
      for (std::size_t i = 0; i < snap.processes.size(); ++i) {
        ProcessObservation& p = snap.processes[i];
        if (p.consumer && p.kernel_busy_us && doubted.count({*p.consumer, p.device.value})) {
          withheld.emplace_back(i, *p.kernel_busy_us);
          p.kernel_busy_us.reset();
        }
      }
    }
    usage = attribution::Attribute(snap);
    for (const auto& [i, claim] : withheld) snap.processes[i].kernel_busy_us = claim;
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
  if (kernel_time_ != nullptr) counters_.kernel_time = kernel_time_->stats();
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
    for (auto& [uuid, layout] : layouts)
      if (auto it = counters_.devices.find(uuid); it != counters_.devices.end())
        it->second.layout = std::move(layout);
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
