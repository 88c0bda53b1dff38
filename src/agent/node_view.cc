#include "agent/node_view.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "agent/sharing_declarations.h"
#include "attribution/attribute.h"
#include "cost/catalog.h"

namespace gpuledger::agent {
namespace {

KubeIndex MakeIndex(const KubeView& kube) {
  KubeIndex index;
  for (const auto& sb : kube.sandboxes) {
    index.sandbox_by_id[sb.id] = &sb;
    if (sb.ready) index.ready_pods[{sb.namespace_name, sb.name}] = &sb;
  }
  for (const auto& c : kube.containers) index.container_by_id[c.id] = &c;
  return index;
}

// Replica index of "GPU-x::3" or "nvidia0/vgpu3"; nullopt when the id names no replica.
std::optional<int> ReplicaIndex(std::string_view id) {
  std::string_view base = attribution::BaseDeviceId(id);
  if (base.size() == id.size()) return std::nullopt;
  std::string_view rest = id.substr(base.size());
  rest.remove_prefix(rest.starts_with("::")  ? 2
                     : rest.starts_with("-") ? 1
                                             : 5);  // "::", "-", "/vgpu"
  int n = 0;
  auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), n);
  if (ec != std::errc()) return std::nullopt;
  return n;
}

// What the pods' grants found beside the grants themselves: replica indices granted per base
// device id, and the GPUs DRA claims name.
struct GrantsFound {
  std::map<std::string, std::set<int>> replicas_granted;
  std::set<std::string> dra_devices;
};

// What the processes' environments declared, per (consumer, GPU), and the GPUs they show to be
// under MPS or a fractional layer.
struct ProcessesFound {
  std::map<std::pair<ConsumerRef, std::string>, EnvDeclaration> declared;
  std::set<std::string> mps_devices, fractional_devices;
};

// The grants of running pods into `s` (those of pods that stopped into its terminal grants).
GrantsFound AddGrants(const KubeView& kube, const KubeIndex& index,
                      const sources::GpuReading& reading, NodeSnapshot& s) {
  const auto& ready_pods = index.ready_pods;
  // Grants of running pods only, as the device plugins declare them (DeclaredGrants).
  GrantsFound found;
  std::map<ConsumerRef, std::vector<const kubelet::ContainerGrant*>> per_container;
  std::map<ConsumerRef, std::vector<const kubelet::ContainerGrant*>> terminal;
  for (const auto& g : kube.grants) {
    auto pod = ready_pods.find({g.namespace_name, g.pod});
    if (pod == ready_pods.end()) {
      // Kept apart for the stale-grant guardrail; the UID from a not-ready sandbox if CRI
      // still has one.
      std::string uid;
      for (const auto& sb : kube.sandboxes)
        if (sb.namespace_name == g.namespace_name && sb.name == g.pod) uid = sb.uid;
      terminal[ConsumerRef{g.namespace_name, g.pod, PodUid{uid}, g.container}].push_back(&g);
      continue;
    }
    per_container[ConsumerRef{g.namespace_name, g.pod, PodUid{pod->second->uid}, g.container}]
        .push_back(&g);
  }
  for (const auto& [ref, lists] : terminal)
    for (Grant& grant : DeclaredGrants(ref, lists, reading))
      s.terminal_grants.push_back(std::move(grant));
  for (const auto& [ref, lists] : per_container) {
    for (Grant& grant : DeclaredGrants(ref, lists, reading)) {
      if (auto r = ReplicaIndex(grant.device_id))
        found.replicas_granted[std::string(attribution::BaseDeviceId(grant.device_id))].insert(*r);
      s.grants.push_back(std::move(grant));
    }
    for (const kubelet::ContainerGrant* g : lists)
      for (const auto& dra : g->dra) {
        std::string device = ResolveDraDevice(dra, reading);
        if (device.empty()) continue;
        s.grants.push_back(
            Grant{ref, device, dra.driver, std::nullopt, dra.claim, std::nullopt, ""});
        found.dra_devices.insert(device);
      }
  }
  return found;
}

// Each GPU's catalog model, replica count, and the modes NVML and the kubelet decide (MIG, DRA).
void SetReplicasAndFixedModes(const KubeView& kube, const GrantsFound& found, NodeSnapshot& s) {
  // Replicas per device: the allocatable list is authoritative; granted ids are a lower bound.
  std::map<std::string, int> replicas;
  for (const auto& a : kube.allocatable)
    if (ReplicaIndex(a.device_id)) ++replicas[std::string(attribution::BaseDeviceId(a.device_id))];
  for (const auto& [base, indices] : found.replicas_granted)
    replicas[base] = std::max(replicas[base], *indices.rbegin() + 1);
  for (PhysicalGpu& gpu : s.gpus) {
    // NVML says "NVIDIA H100 80GB HBM3"; prices and reports use the catalog's model names.
    gpu.model = cost::NormalizeGpuModel(gpu.model);
    bool mig = std::any_of(s.mig_instances.begin(), s.mig_instances.end(),
                           [&](const MigInstance& m) { return m.parent == gpu.uuid; });
    int r = 1;
    if (auto it = replicas.find(gpu.uuid.value); it != replicas.end()) r = it->second;
    for (const auto& m : s.mig_instances)
      if (m.parent == gpu.uuid)
        if (auto it = replicas.find(m.uuid.value); it != replicas.end())
          r = std::max(r, it->second);
    gpu.replicas = std::max(1, r);
    // MIG and DRA are what NVML and the kubelet say; the other modes are decided below, once
    // the processes' environment is known.
    if (mig) {
      gpu.sharing = SharingMode::kMig;
    } else if (found.dra_devices.count(gpu.uuid.value)) {
      gpu.sharing = SharingMode::kDra;
    }
  }
}

// The GPU processes into `s`, each tied to its consumer: a container through the runtime's
// lists, else the host's user or unit.
ProcessesFound AddProcesses(const sources::GpuReading& reading, const KubeView& kube,
                            const KubeIndex& index,
                            const std::map<int, procfs::ProcessIdentity>& identities,
                            JoinStats* stats, NodeSnapshot& s) {
  const auto& sandbox_by_id = index.sandbox_by_id;
  const auto& container_by_id = index.container_by_id;
  // Processes -> consumers, and what the sharing layer told each (ProcessIdentity::sharing).
  ProcessesFound found;
  for (ProcessObservation p : reading.processes) {
    // An MPS server or client NVML lists makes its device MPS, whoever it belongs to.
    if (p.mps_client)
      found.mps_devices.insert(std::string(attribution::BaseDeviceId(p.device.value)));
    auto id = identities.find(p.pid);
    if (id == identities.end()) {
      // Exited between NVML and /proc: its memory and samples still count, to the host bucket
      // by PID, rather than silently vanishing.
      if (stats) ++stats->vanished_processes;
      p.host_name = "pid:" + std::to_string(p.pid);
      s.processes.push_back(std::move(p));
      continue;
    }
    const procfs::ProcessIdentity& ident = id->second;
    if (IsMpsServer(ident.comm)) found.mps_devices.insert(p.device.value);
    if (ident.visible_devices) p.visible_devices = *ident.visible_devices;
    if (ident.cuda_visible_devices) p.cuda_visible_devices = *ident.cuda_visible_devices;
    p.comm = ident.comm;
    p.namespace_pid = ident.namespace_pid;
    if (ident.container && kube.present) {
      // The innermost container the runtime knows (nested ones first, e.g. docker-in-docker
      // where the runtime ran the inner one, else the outermost).
      auto c = container_by_id.end();
      for (auto it = ident.container->nested_ids.rbegin();
           it != ident.container->nested_ids.rend() && c == container_by_id.end(); ++it)
        c = container_by_id.find(*it);
      if (c == container_by_id.end()) c = container_by_id.find(ident.container->container_id);
      const cri::PodSandbox* sb = nullptr;
      if (c != container_by_id.end()) {
        auto it = sandbox_by_id.find(c->second->pod_sandbox_id);
        if (it != sandbox_by_id.end()) sb = it->second;
      }
      if (sb != nullptr) {
        p.consumer = ConsumerRef{sb->namespace_name, sb->name, PodUid{sb->uid}, c->second->name};
      } else {
        // A container CRI does not know yet: keep it apart by pod UID and container id, and
        // let the caller refresh the view.
        if (stats) ++stats->unknown_containers;
        p.consumer = ConsumerRef{
            std::string(kUnresolvedNamespace), "pod-" + ident.container->pod_uid,
            PodUid{ident.container->pod_uid}, ident.container->container_id.substr(0, 12)};
      }
    } else {
      p.host_name = HostConsumerName(ident);
    }
    if (p.consumer) {
      const GpuUuid gpu = PhysicalOf(p.device, reading);
      if (auto d = FromEnvironment(ident.sharing, gpu, reading)) {
        found.declared.try_emplace({*p.consumer, d->gpu.value}, *d);
        if (d->mps)
          found.mps_devices.insert(d->gpu.value);
        else if (d->ppd)
          found.fractional_devices.insert(d->gpu.value);
      }
    }
    s.processes.push_back(std::move(p));
  }
  return found;
}

// What the sharing layer told the processes is what their consumers' grants mean, where the
// grant itself declared nothing (below).
void ApplyDeclarations(const ProcessesFound& found, const sources::GpuReading& reading,
                       NodeSnapshot& s) {
  // What the sharing layer told the processes is what the grant means, where the grant itself
  // declared nothing: a percentage or a memory cap becomes the declared share of that
  // consumer's grants on the process's GPU. Alibaba's scheduler names the GPU in the
  // environment (the kubelet's fake device ids do not): the grant moves there.
  for (Grant& g : s.grants) {
    if (!g.dra_claim.empty()) continue;
    if (g.resource_name == kAliyunGpuMem || g.resource_name == kAlibabaCloudGpuMem) {
      for (const auto& [key, d] : found.declared) {
        if (key.first != g.consumer || !d.from_gpushare_index || g.device_id == d.gpu.value)
          continue;
        g.device_id = d.gpu.value;
        if (g.declared_memory_bytes)
          g.declared_ppd = MemoryShare(*g.declared_memory_bytes, d.gpu, reading);
      }
    }
    auto it = found.declared.find(
        {g.consumer,
         PhysicalOf(GpuUuid{std::string(attribution::BaseDeviceId(g.device_id))}, reading).value});
    if (it == found.declared.end()) continue;
    const EnvDeclaration& d = it->second;
    if (!g.declared_ppd && d.ppd) {
      g.declared_ppd = d.ppd;
      g.share_source = d.share_source;
    }
    if (!g.declared_memory_bytes && d.memory_bytes) g.declared_memory_bytes = d.memory_bytes;
  }
}

// An MPS server or client makes the GPU MPS; a declared share on it (after ApplyDeclarations)
// fractional; advertised replicas time-slicing.
void DecideSharing(const ProcessesFound& found, NodeSnapshot& s) {
  std::set<std::string> declared_on;
  for (const Grant& g : s.grants)
    if (g.declared_ppd || g.declared_memory_bytes)
      declared_on.insert(std::string(attribution::BaseDeviceId(g.device_id)));
  for (PhysicalGpu& gpu : s.gpus) {
    if (gpu.sharing == SharingMode::kMig || gpu.sharing == SharingMode::kDra) continue;
    if (found.mps_devices.count(gpu.uuid.value)) {
      gpu.sharing = SharingMode::kMps;
    } else if (declared_on.count(gpu.uuid.value) ||
               found.fractional_devices.count(gpu.uuid.value)) {
      gpu.sharing = SharingMode::kFractional;
    } else if (gpu.replicas > 1) {
      gpu.sharing = SharingMode::kTimeSlicing;
    } else {
      gpu.sharing = SharingMode::kExclusive;
    }
  }
}

}  // namespace

void KubeView::Reindex() {
  index = MakeIndex(*this);
  indexed = true;
}

std::string HostConsumerName(const procfs::ProcessIdentity& id) {
  // People first: on a shared GPU server or a Slurm node a regular user's process belongs to
  // that user, whatever unit or scope it runs in. System accounts' processes belong to their
  // service (a daemon, an inference server run by systemd).
  const bool regular_user = id.uid >= 1000 && id.uid != 65534;
  const std::string& unit = id.unit;
  const bool service = !unit.empty() && !unit.starts_with("user@") && !unit.starts_with("session-");
  if (!regular_user && service) return "unit:" + unit;
  if (!id.user.empty()) return "user:" + id.user;
  if (id.uid >= 0) return "user:" + std::to_string(id.uid);
  return "pid:" + std::to_string(id.pid);
}

std::string ResolveDraDevice(const kubelet::DraDevice& dra, const sources::GpuReading& reading) {
  for (const std::string& cdi : dra.cdi_devices) {
    auto eq = cdi.rfind('=');
    std::string_view name =
        eq == std::string::npos ? std::string_view(cdi) : std::string_view(cdi).substr(eq + 1);
    if (name.starts_with("GPU-") || name.starts_with("MIG-")) return std::string(name);
  }
  // The NVIDIA DRA driver names whole GPUs "gpu-<minor>"; our GPU order is NVML's index order.
  if (dra.device.starts_with("gpu-")) {
    int index = -1;
    std::string_view n = std::string_view(dra.device).substr(4);
    auto [p, ec] = std::from_chars(n.data(), n.data() + n.size(), index);
    if (ec == std::errc() && p == n.data() + n.size() && index >= 0 &&
        index < static_cast<int>(reading.gpus.size()))
      return reading.gpus[static_cast<std::size_t>(index)].uuid.value;
  }
  return {};
}

NodeSnapshot BuildSnapshot(const std::string& node, const sources::GpuReading& reading,
                           const KubeView& kube,
                           const std::map<int, procfs::ProcessIdentity>& identities,
                           JoinStats* stats) {
  NodeSnapshot s;
  static_cast<DeviceInterval&>(s) = reading;
  s.node = node;
  // CRI: ready sandboxes by (namespace, pod) and by id; containers by id.
  KubeIndex local;
  if (!kube.indexed) local = MakeIndex(kube);
  const KubeIndex& index = kube.indexed ? kube.index : local;
  SetReplicasAndFixedModes(kube, AddGrants(kube, index, reading, s), s);
  const ProcessesFound found = AddProcesses(reading, kube, index, identities, stats, s);
  ApplyDeclarations(found, reading, s);
  DecideSharing(found, s);
  return s;
}

}  // namespace gpuledger::agent
