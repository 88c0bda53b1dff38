#include "agent/node_view.h"

#include <algorithm>
#include <charconv>
#include <set>

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
  rest.remove_prefix(rest.starts_with("::") ? 2 : 5);  // "::" or "/vgpu"
  int n = 0;
  auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), n);
  if (ec != std::errc()) return std::nullopt;
  return n;
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
    std::string_view name = eq == std::string::npos ? std::string_view(cdi)
                                                    : std::string_view(cdi).substr(eq + 1);
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
  s.node = node;
  s.start_us = reading.start_us;
  s.end_us = reading.end_us;
  s.gpus = reading.gpus;
  s.mig_instances = reading.mig_instances;
  s.signals = reading.signals;

  // CRI: ready sandboxes by (namespace, pod) and by id; containers by id.
  KubeIndex local;
  if (!kube.indexed) local = MakeIndex(kube);
  const KubeIndex& index = kube.indexed ? kube.index : local;
  const auto& ready_pods = index.ready_pods;
  const auto& sandbox_by_id = index.sandbox_by_id;
  const auto& container_by_id = index.container_by_id;

  // Grants of running pods only.
  std::map<std::string, std::set<int>> replicas_granted;  // base id -> replica indices
  std::set<std::string> dra_devices, fractional_grants;
  for (const auto& g : kube.grants) {
    auto pod = ready_pods.find({g.namespace_name, g.pod});
    if (pod == ready_pods.end()) continue;
    ConsumerRef ref{g.namespace_name, g.pod, PodUid{pod->second->uid}, g.container};
    // Thousandths of a GPU granted as device ids "<gpu>::milli-<k>" (a fractional device
    // plugin): one grant per GPU declaring the sum.
    std::map<std::string, SharePpd> milli;
    for (const auto& id : g.device_ids)
      if (auto pos = id.find("::milli-"); pos != std::string::npos) milli[id.substr(0, pos)] += kWholeGpu / 1000;
    for (const auto& [gpu, share] : milli) {
      s.grants.push_back(Grant{ref, gpu, g.resource_name, share, ""});
      fractional_grants.insert(gpu);
    }
    for (const auto& id : g.device_ids) {
      if (id.find("::milli-") != std::string::npos) continue;
      s.grants.push_back(Grant{ref, id, g.resource_name, std::nullopt, ""});
      if (auto r = ReplicaIndex(id))
        replicas_granted[std::string(attribution::BaseDeviceId(id))].insert(*r);
    }
    for (const auto& dra : g.dra) {
      std::string device = ResolveDraDevice(dra, reading);
      if (device.empty()) continue;
      s.grants.push_back(Grant{ref, device, dra.driver, std::nullopt, dra.claim});
      dra_devices.insert(device);
    }
  }

  // Replicas per device: the allocatable list is authoritative; granted ids are a lower bound.
  std::map<std::string, int> replicas;
  for (const auto& a : kube.allocatable)
    if (ReplicaIndex(a.device_id)) ++replicas[std::string(attribution::BaseDeviceId(a.device_id))];
  for (const auto& [base, indices] : replicas_granted)
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
        if (auto it = replicas.find(m.uuid.value); it != replicas.end()) r = std::max(r, it->second);
    gpu.replicas = std::max(1, r);
    if (mig) {
      gpu.sharing = SharingMode::kMig;
    } else if (dra_devices.count(gpu.uuid.value)) {
      gpu.sharing = SharingMode::kDra;
    } else if (fractional_grants.count(gpu.uuid.value)) {
      gpu.sharing = SharingMode::kFractional;
    } else if (gpu.replicas > 1) {
      gpu.sharing = SharingMode::kTimeSlicing;
    } else {
      gpu.sharing = SharingMode::kExclusive;
    }
  }

  // Processes -> consumers. Sharing hints from their environment (see ApplySharingHints).
  std::map<std::pair<ConsumerRef, std::string>, SharePpd> declared;  // (consumer, device) -> share
  std::set<std::string> mps_devices, fractional_devices;
  for (ProcessObservation p : reading.processes) {
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
    if (ident.visible_devices) p.visible_devices = *ident.visible_devices;
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
        p.consumer = ConsumerRef{"__unresolved__", "pod-" + ident.container->pod_uid,
                                 PodUid{ident.container->pod_uid},
                                 ident.container->container_id.substr(0, 12)};
      }
    } else {
      p.host_name = HostConsumerName(ident);
    }
    if (p.consumer) {
      const std::optional<int> pct = ident.mps_client && ident.mps_thread_percentage
                                         ? ident.mps_thread_percentage
                                         : ident.sm_limit_percentage;
      if (pct) declared[{*p.consumer, p.device.value}] = kWholeGpu / 100 * *pct;
      if (ident.mps_client) mps_devices.insert(p.device.value);
      else if (ident.sm_limit_percentage) fractional_devices.insert(p.device.value);
    }
    s.processes.push_back(std::move(p));
  }
  // What the sharing layer told the processes is what the grant means: NVIDIA's device plugin
  // in MPS mode hands its clients CUDA_MPS_PIPE_DIRECTORY (and may cap them with
  // CUDA_MPS_ACTIVE_THREAD_PERCENTAGE); HAMi caps a fractional share with CUDA_DEVICE_SM_LIMIT.
  // A percentage becomes the declared share of that consumer's grants on the process's device.
  for (Grant& g : s.grants) {
    auto it = declared.find({g.consumer, std::string(attribution::BaseDeviceId(g.device_id))});
    if (it != declared.end() && !g.declared_ppd) g.declared_ppd = it->second;
  }
  for (PhysicalGpu& gpu : s.gpus) {
    if (gpu.sharing == SharingMode::kMig || gpu.sharing == SharingMode::kDra) continue;
    if (mps_devices.count(gpu.uuid.value)) gpu.sharing = SharingMode::kMps;
    else if (fractional_devices.count(gpu.uuid.value)) gpu.sharing = SharingMode::kFractional;
  }
  return s;
}

}  // namespace gpuledger::agent
