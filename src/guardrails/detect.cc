#include "guardrails/detect.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include <fmt/format.h>

#include "model/compute_band.h"
#include "model/device_id.h"

namespace gpuledger::guardrails {
namespace {

struct Node {
  const NodeSnapshot& s;
  std::map<std::string, const PhysicalGpu*> gpu_by_uuid;
  std::map<std::string, const MigInstance*> mig_by_uuid;

  explicit Node(const NodeSnapshot& snapshot) : s(snapshot) {
    for (const auto& g : s.gpus) gpu_by_uuid[g.uuid.value] = &g;
    for (const auto& m : s.mig_instances) mig_by_uuid[m.uuid.value] = &m;
  }
  std::string PhysicalOf(const std::string& device) const {
    auto m = mig_by_uuid.find(device);
    return m == mig_by_uuid.end() ? device : m->second->parent.value;
  }
};

std::string Join(const std::set<std::string>& items) {
  if (items.empty()) return "none";
  return fmt::format("{}", fmt::join(items, ","));
}

std::string Pids(const std::vector<const ProcessObservation*>& ps) {
  std::set<int> pids;
  for (const auto* p : ps) pids.insert(p->pid);
  return fmt::format("{}", fmt::join(pids, ","));
}

Bytes MemoryOf(const std::vector<const ProcessObservation*>& ps) {
  Bytes b = 0;
  for (const auto* p : ps) b += p->used_memory_bytes;
  return b;
}

// Whether a grant on `granted` (a base device id) lets a process run on `device`.
bool Covers(const std::set<std::string>& granted, const std::string& device, const Node& node) {
  return granted.count(device) || granted.count(node.PhysicalOf(device));
}

// The devices an NVIDIA_/CUDA_VISIBLE_DEVICES value names that are not granted; "all" when it
// is "all"; empty when it names nothing or only granted devices. Tokens that are neither an
// index of the node's GPUs nor a UUID (CUDA_VISIBLE_DEVICES indices are relative to what the
// container sees) say nothing.
std::string UngrantedVisible(std::string_view value, bool indices_are_node_gpus,
                             const std::set<std::string>& granted, const Node& node) {
  if (value == "all") return "all";
  if (value.empty() || value == "void" || value == "none" || value.starts_with("/")) return {};
  std::set<std::string> extra;
  std::size_t at = 0;
  while (at <= value.size()) {
    std::size_t end = value.find(',', at);
    if (end == std::string_view::npos) end = value.size();
    std::string_view token = value.substr(at, end - at);
    at = end + 1;
    std::string device;
    if (token.starts_with("GPU-") || token.starts_with("MIG-")) {
      if (token.find('/') != std::string_view::npos) continue;  // legacy MIG-GPU-x/gi/ci
      device = std::string(token);
    } else if (indices_are_node_gpus) {
      int index = -1;
      auto [p, ec] = std::from_chars(token.data(), token.data() + token.size(), index);
      if (ec != std::errc() || p != token.data() + token.size() || index < 0 ||
          index >= static_cast<int>(node.s.gpus.size()))
        continue;
      device = node.s.gpus[static_cast<std::size_t>(index)].uuid.value;
    } else {
      continue;
    }
    if (!Covers(granted, device, node)) extra.insert(device);
  }
  return extra.empty() ? std::string() : Join(extra);
}

bool Shared(SharingMode mode) {
  return mode == SharingMode::kTimeSlicing || mode == SharingMode::kMps ||
         mode == SharingMode::kFractional || mode == SharingMode::kDra;
}

std::string Share(double share) { return fmt::format("{:.3f}", share); }

// Collects what the policy lets through: kinds turned off and exempt subjects are dropped here.
class Observations {
 public:
  explicit Observations(const Policy& policy) : policy_(policy) {}
  void operator()(FindingKind kind, const ConsumerRef& subject, std::string gpu,
                  std::string evidence, double magnitude) {
    if (!policy_.Enabled(kind) || policy_.Exempt(kind, subject)) return;
    out_.push_back(Observation{kind, subject, std::move(gpu), std::move(evidence), magnitude});
  }
  const Policy& policy() const { return policy_; }
  std::vector<Observation> Take() && { return std::move(out_); }

 private:
  const Policy& policy_;
  std::vector<Observation> out_;
};

// What each container was granted: base device ids, and its grant per physical GPU.
struct Granted {
  std::map<ConsumerRef, std::set<std::string>> devices;
  std::map<std::pair<ConsumerRef, std::string>, const Grant*> on;  // (consumer, GPU)
};

// unallocated-access and visible-devices-override of containers' processes, unmanaged-process
// of the host's on a Kubernetes node.
void ObserveProcesses(const NodeSnapshot& snapshot, const Node& node, Granted& granted,
                      bool kubernetes_node, Observations& observe) {
  // Processes by (consumer, device) and by (host consumer, device).
  std::map<std::pair<ConsumerRef, std::string>, std::vector<const ProcessObservation*>>
      by_container;
  std::map<std::pair<std::string, std::string>, std::vector<const ProcessObservation*>> by_host;
  for (const ProcessObservation& p : snapshot.processes) {
    // The MPS server is the sharing layer itself, run by the device plugin's MPS control daemon
    // pod with no GPU request of its own: not a workload using a GPU it was not given.
    if (IsMpsServer(p.comm)) continue;
    if (p.consumer) {
      if (p.consumer->namespace_name == kUnresolvedNamespace) continue;  // resolved next cycle
      by_container[{*p.consumer, p.device.value}].push_back(&p);
    } else if (!p.comm.empty()) {
      // An empty comm: the process exited before /proc was read (transient, not a finding).
      by_host[{p.host_name, p.device.value}].push_back(&p);
    }
  }

  for (const auto& [key, ps] : by_container) {
    const auto& [consumer, device] = key;
    const std::set<std::string>& mine = granted.devices[consumer];
    const std::string visible = ps.front()->visible_devices;
    if (!Covers(mine, device, node)) {
      std::string evidence =
          fmt::format("pids={} granted={} memory_bytes={}", Pids(ps), Join(mine), MemoryOf(ps));
      if (!visible.empty()) evidence += " NVIDIA_VISIBLE_DEVICES=" + visible;
      observe(FindingKind::kUnallocatedAccess, consumer, device, std::move(evidence),
              static_cast<double>(MemoryOf(ps)));
    }
    for (const auto* p : ps) {
      std::string nvidia = UngrantedVisible(p->visible_devices, true, mine, node);
      std::string cuda = UngrantedVisible(p->cuda_visible_devices, false, mine, node);
      if (nvidia.empty() && cuda.empty()) continue;
      std::string evidence = fmt::format("pids={} granted={}", Pids(ps), Join(mine));
      if (!nvidia.empty())
        evidence +=
            fmt::format(" NVIDIA_VISIBLE_DEVICES={} ungranted={}", p->visible_devices, nvidia);
      if (!cuda.empty())
        evidence +=
            fmt::format(" CUDA_VISIBLE_DEVICES={} ungranted={}", p->cuda_visible_devices, cuda);
      observe(FindingKind::kVisibleDevicesOverride, consumer, device, std::move(evidence), 0);
      break;
    }
  }

  if (kubernetes_node) {
    for (const auto& [key, ps] : by_host) {
      const auto& [name, device] = key;
      observe(
          FindingKind::kUnmanagedProcess,
          ConsumerRef{std::string(kHostNamespace), name, PodUid{}, ""}, device,
          fmt::format("pids={} comm={} memory_bytes={}", Pids(ps), ps.front()->comm, MemoryOf(ps)),
          static_cast<double>(MemoryOf(ps)));
    }
  }
}

// kernel-time-mismatch (issue 31): published kernel time is a claim. NVML's per-process samples
// are off by up to MeasuredComputeBand("process-samples") on a real GPU (2.11x the truth at
// worst), so a consumer is accused only when NVML saw it busy beyond that band plus the
// isolation margin, for the isolation tolerance (five minutes by default).
void ObserveKernelTime(const NodeSnapshot& snapshot, Observations& observe) {
  const Micros dt = snapshot.duration_us();
  const Policy& policy = observe.policy();
  if (dt > 0) {
    std::map<std::pair<ConsumerRef, std::string>, std::pair<GpuMicros, GpuMicros>> claims;
    for (const ProcessObservation& p : snapshot.processes) {
      if (!p.consumer || !p.kernel_busy_us || !p.sm_busy_us) continue;
      auto& [nvml, kernel] = claims[{*p.consumer, p.device.value}];
      nvml += std::max<GpuMicros>(0, *p.sm_busy_us);
      kernel += std::max<GpuMicros>(0, *p.kernel_busy_us);
    }
    const double band = MeasuredComputeBand("process-samples").value_or(1.11);
    for (const auto& [key, sums] : claims) {
      const auto [nvml, kernel] = sums;
      const double bound = (1 + band) * static_cast<double>(kernel) +
                           policy.isolation_compute_margin * static_cast<double>(dt);
      if (static_cast<double>(nvml) > bound)
        observe(FindingKind::kKernelTimeMismatch, key.first, key.second,
                fmt::format("nvml_busy_us={} kernel_busy_us={} band={:g}", nvml, kernel, band),
                static_cast<double>(nvml) / static_cast<double>(std::max<GpuMicros>(kernel, 1)));
    }
  }
}

// memory-oversubscribed and isolation-breach, per device from the cycle's usage.
void ObserveSharing(const NodeSnapshot& snapshot, const std::vector<DeviceUsage>& usage,
                    const Node& node, const Granted& granted, Observations& observe) {
  const Micros dt = snapshot.duration_us();
  const Policy& policy = observe.policy();
  for (const DeviceUsage& u : usage) {
    auto gpu = node.gpu_by_uuid.find(u.gpu.value);
    if (gpu == node.gpu_by_uuid.end()) continue;
    const Bytes total =
        u.memory_total_bytes > 0 ? u.memory_total_bytes : gpu->second->memory_total_bytes;
    if (Shared(u.sharing) && total > 0) {
      Bytes used = 0;
      for (const DeviceSignals& sig : snapshot.signals)
        if (sig.device == u.gpu) used = sig.memory_used_bytes;
      if (static_cast<double>(used) >=
          policy.memory_together_fraction * static_cast<double>(total)) {
        std::set<std::string> sharers;
        for (const ConsumerUsage& c : u.consumers) sharers.insert(c.consumer.Key());
        observe(FindingKind::kMemoryOversubscribed, ConsumerRef{}, u.gpu.value,
                fmt::format("memory_used_bytes={} memory_total_bytes={} threshold={} sharers={}",
                            used, total, Share(policy.memory_together_fraction), Join(sharers)),
                static_cast<double>(used));
      }
    }
    for (const ConsumerUsage& c : u.consumers) {
      auto g = granted.on.find({c.consumer, u.gpu.value});
      if (g == granted.on.end()) continue;  // no grant: unallocated-access says it
      const Grant& grant = *g->second;
      if (grant.declared_memory_bytes) {
        if (c.memory_bytes > *grant.declared_memory_bytes)
          observe(FindingKind::kIsolationBreach, c.consumer, u.gpu.value,
                  fmt::format("memory_bytes={} declared_memory_bytes={} device_id={}",
                              c.memory_bytes, *grant.declared_memory_bytes, grant.device_id),
                  static_cast<double>(c.memory_bytes) /
                      static_cast<double>(*grant.declared_memory_bytes));
      } else if (Shared(u.sharing) && total > 0) {
        const double fair = static_cast<double>(c.allocated_ppd) / static_cast<double>(kWholeGpu);
        const double held = static_cast<double>(c.memory_bytes) / static_cast<double>(total);
        if (held > fair + policy.memory_fair_margin)
          observe(FindingKind::kMemoryOversubscribed, c.consumer, u.gpu.value,
                  fmt::format("memory_bytes={} fair_share={} memory_total_bytes={}", c.memory_bytes,
                              Share(fair), total),
                  held);
      }
      // Only a measured compute share: with several processes on a GPU, NVML gives each of its
      // sample windows whole to one of them (measured on an H200, docs/attribution.md), so a
      // five-minute split of them is off by tens of percent and would accuse the innocent.
      if (grant.declared_ppd && !grant.share_source.empty() &&
          c.compute_quality == Quality::kMeasured && dt > 0) {
        const double declared =
            static_cast<double>(*grant.declared_ppd) / static_cast<double>(kWholeGpu);
        const double used = static_cast<double>(c.compute_us) / static_cast<double>(dt);
        if (used > declared + policy.isolation_compute_margin)
          observe(FindingKind::kIsolationBreach, c.consumer, u.gpu.value,
                  fmt::format("compute_share={} declared_share={} source={}", Share(used),
                              Share(declared), grant.share_source),
                  used - declared);
      }
    }
  }
}

// stale-grant: a terminated pod's grant the kubelet still lists, with the share it holds.
void ObserveStaleGrants(const NodeSnapshot& snapshot, const Node& node, Observations& observe) {
  for (const Grant& g : snapshot.terminal_grants) {
    std::string base(BaseDeviceId(g.device_id));
    // The share of the physical GPU the grant holds: what the scheduler cannot hand out.
    SharePpd share = kWholeGpu;
    if (g.declared_ppd) {
      share = *g.declared_ppd;
    } else if (auto m = node.mig_by_uuid.find(base); m != node.mig_by_uuid.end()) {
      auto parent = node.gpu_by_uuid.find(m->second->parent.value);
      const int total =
          parent == node.gpu_by_uuid.end() ? 7 : std::max(1, parent->second->total_slices);
      share = kWholeGpu * m->second->compute_slices / total;
    } else if (auto p = node.gpu_by_uuid.find(base);
               p != node.gpu_by_uuid.end() && base != g.device_id) {
      share = kWholeGpu / std::max(1, p->second->replicas);
    }
    observe(
        FindingKind::kStaleGrant, g.consumer, base,
        fmt::format("device_id={} resource={} share_ppd={}", g.device_id, g.resource_name, share),
        0);
  }
}

}  // namespace

std::vector<Observation> Observe(const NodeSnapshot& snapshot,
                                 const std::vector<DeviceUsage>& usage, const Policy& policy,
                                 bool kubernetes_node) {
  Node node(snapshot);
  Observations observe(policy);
  Granted granted;
  for (const Grant& g : snapshot.grants) {
    std::string base(BaseDeviceId(g.device_id));
    granted.devices[g.consumer].insert(base);
    granted.on.try_emplace({g.consumer, node.PhysicalOf(base)}, &g);
  }
  ObserveProcesses(snapshot, node, granted, kubernetes_node, observe);
  ObserveKernelTime(snapshot, observe);
  ObserveSharing(snapshot, usage, node, granted, observe);
  ObserveStaleGrants(snapshot, node, observe);
  return std::move(observe).Take();
}

FindingTracker::FindingTracker(Policy policy, std::string node, Micros keep_resolved_us)
    : policy_(std::move(policy)), node_(std::move(node)), keep_resolved_us_(keep_resolved_us) {}

Micros FindingTracker::Tolerance(FindingKind kind) const {
  switch (kind) {
    case FindingKind::kIsolationBreach:
    case FindingKind::kMemoryOversubscribed:
    case FindingKind::kKernelTimeMismatch:
      return policy_.isolation_tolerance_us;
    case FindingKind::kStaleGrant:
      return policy_.stale_grant_tolerance_us;
    default:
      return 0;
  }
}

void FindingTracker::Update(const std::vector<Observation>& observations, Micros start_us,
                            Micros end_us) {
  std::set<Key> seen;
  for (const Observation& o : observations) {
    Key key{o.kind, o.subject, o.gpu_uuid};
    if (!seen.insert(key).second) continue;
    auto [it, fresh] = states_.try_emplace(key);
    State& s = it->second;
    if (s.resolved_us) {  // it came back after resolving: a new finding
      s = State{};
      fresh = true;
    }
    if (fresh) s.since_us = start_us;
    s.last_seen_us = end_us;
    if (o.magnitude > s.worst || s.evidence.empty()) {
      s.worst = o.magnitude;
      s.evidence = o.evidence;
    }
    if (!s.open && end_us - s.since_us >= Tolerance(o.kind)) {
      s.open = true;
      ++opened_total_[o.kind];
    }
  }
  for (auto it = states_.begin(); it != states_.end();) {
    State& s = it->second;
    if (seen.count(it->first)) {
      ++it;
      continue;
    }
    if (!s.open) {
      it = states_.erase(it);  // the condition did not hold for its tolerance
    } else if (s.resolved_us) {
      it = end_us - *s.resolved_us > keep_resolved_us_ ? states_.erase(it) : std::next(it);
    } else {
      if (end_us - s.last_seen_us >= policy_.resolve_after_us) s.resolved_us = s.last_seen_us;
      ++it;
    }
  }
}

std::vector<Finding> FindingTracker::Current() const {
  std::vector<Finding> out;
  for (const auto& [key, s] : states_) {
    if (!s.open) continue;
    out.push_back({.kind = key.kind,
                   .severity = policy_.For(key.kind).severity,
                   .node = node_,
                   .subject = key.subject,
                   .gpu_uuid = key.gpu_uuid,
                   .evidence = s.evidence,
                   .first_seen_us = s.since_us,
                   .last_seen_us = s.last_seen_us,
                   .resolved_us = s.resolved_us});
  }
  return out;
}

}  // namespace gpuledger::guardrails
