#include "sim/simulated_node.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "sim/simulator.h"

namespace gpuledger::sim {
namespace {

// A cgroup v2 /proc/<pid>/cgroup line as the kubelet's systemd driver names it.
std::string PodCgroup(const ConsumerRef& ref) {
  return fmt::format("0::{}\n", ContainerCgroupDir(ref.pod_uid.value, ContainerIdFor(ref)));
}

struct HostUser {
  std::string cgroup;
  int uid = 0;
};

// "user:alice" -> a login session of alice; "unit:x.service" -> a system service.
HostUser HostIdentity(const std::string& host_name, HostUids& uids) {
  if (host_name.starts_with("unit:"))
    return {fmt::format("0::/system.slice/{}\n", host_name.substr(5)), 0};
  std::string user = host_name.starts_with("user:") ? host_name.substr(5) : host_name;
  auto [it, fresh] = uids.try_emplace(user, 1000 + static_cast<int>(uids.size()));
  return {fmt::format("0::/user.slice/user-{0}.slice/session-{0}.scope\n", it->second), it->second};
}

std::string_view BaseId(std::string_view id) { return id.substr(0, id.find("::")); }

// The physical GPU a device id (GPU, replica or MIG instance) lies on; nullptr when unknown.
const PhysicalGpu* GpuOf(std::string_view device, const std::vector<PhysicalGpu>& gpus,
                         const std::vector<MigInstance>* migs = nullptr) {
  device = BaseId(device);
  for (const PhysicalGpu& g : gpus)
    if (g.uuid.value == device) return &g;
  if (migs != nullptr)
    for (const MigInstance& m : *migs)
      if (m.uuid.value == device) return GpuOf(m.parent.value, gpus);
  return nullptr;
}

constexpr std::string_view kGpushareResource = "aliyun.com/gpu-mem";

// Whole GiB of the card's memory a declared share stands for (Alibaba GPU share's unit).
std::int64_t ShareGib(SharePpd share, const PhysicalGpu& gpu) {
  const double gib = static_cast<double>(gpu.memory_total_bytes) / static_cast<double>(kGiB);
  return std::llround(gib * static_cast<double>(share) / static_cast<double>(kWholeGpu));
}

// The environment the sharing layer gives a process of `consumer` running on `device`.
std::string SharingEnvironment(const ConsumerRef& consumer, const GpuUuid& device,
                               const std::vector<Grant>& grants,
                               const std::vector<PhysicalGpu>& gpus) {
  const PhysicalGpu* gpu = GpuOf(device.value, gpus);
  if (gpu == nullptr) return {};
  std::optional<SharePpd> share;
  std::string resource;
  for (const Grant& g : grants)
    if (g.consumer == consumer && BaseId(g.device_id) == device.value && g.declared_ppd) {
      share = g.declared_ppd;
      resource = g.resource_name;
    }
  const bool whole_percent = share && *share % (kWholeGpu / 100) == 0 && *share > 0;
  std::string env;
  auto add = [&](std::string_view name, const std::string& value) {
    env += fmt::format("{}={}", name, value);
    env.push_back('\0');
  };
  if (gpu->sharing == SharingMode::kMps) {
    // NVIDIA's device plugin in MPS mode: the daemon's pipe and each replica's memory cap.
    add("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps");
    if (whole_percent)
      add("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", std::to_string(*share / (kWholeGpu / 100)));
    add("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
        fmt::format("0={}M", gpu->memory_total_bytes / std::max(1, gpu->replicas) / kMiB));
  } else if (gpu->sharing == SharingMode::kFractional && share && resource == kGpushareResource) {
    const auto index = static_cast<std::size_t>(gpu - gpus.data());
    add("ALIYUN_COM_GPU_MEM_IDX", std::to_string(index));
    add("ALIYUN_COM_GPU_MEM_CONTAINER", std::to_string(ShareGib(*share, *gpu)));
    add("ALIYUN_COM_GPU_MEM_DEV", std::to_string(ShareGib(kWholeGpu, *gpu)));
  } else if (gpu->sharing == SharingMode::kFractional && whole_percent) {
    // HAMi-core's caps (a gpu_milli plugin that is HAMi underneath sets the same).
    add("CUDA_DEVICE_SM_LIMIT", std::to_string(*share / (kWholeGpu / 100)));
    if (resource != kGpuMilliResource) {
      const __int128 bytes = static_cast<__int128>(gpu->memory_total_bytes) * *share / kWholeGpu;
      add("CUDA_DEVICE_MEMORY_LIMIT_0",
          fmt::format("{}m", static_cast<std::int64_t>(bytes / kMiB)));
    }
  }
  return env;
}

}  // namespace

std::string PodCgroupDir(std::string_view pod_uid) {
  std::string uid(pod_uid);
  std::replace(uid.begin(), uid.end(), '-', '_');  // systemd's escaping of '-'
  return fmt::format("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice",
                     uid);
}

std::string ContainerCgroupDir(std::string_view pod_uid, std::string_view container_id) {
  return fmt::format("{}/cri-containerd-{}.scope", PodCgroupDir(pod_uid), container_id);
}

std::string FractionalResource(std::string_view fractional_layer) {
  if (fractional_layer == "hami") return "nvidia.com/gpu";
  if (fractional_layer == "gpushare") return std::string(kGpushareResource);
  return std::string(kGpuMilliResource);
}

std::map<std::string, std::string> ProcfsFiles(const std::vector<ProcessObservation>& processes,
                                               const std::vector<Grant>& grants,
                                               const std::vector<PhysicalGpu>& gpus,
                                               HostUids& uids) {
  std::map<std::string, std::string> files;
  for (const ProcessObservation& p : processes) {
    const std::string dir = fmt::format("/proc/{}/", p.pid);
    if (files.count(dir + "cgroup")) continue;  // one process on several devices
    std::string cgroup;
    int uid = 0;
    std::string environ = "PATH=/usr/local/bin:/usr/bin";
    environ.push_back('\0');
    if (p.consumer) {
      cgroup = PodCgroup(*p.consumer);
      environ += SharingEnvironment(*p.consumer, p.device, grants, gpus);
    } else {
      HostUser h = HostIdentity(p.host_name, uids);
      cgroup = h.cgroup;
      uid = h.uid;
    }
    environ += "NVIDIA_VISIBLE_DEVICES=" +
               (p.visible_devices.empty() ? p.device.value : p.visible_devices);
    environ.push_back('\0');
    files[dir + "cgroup"] = cgroup;
    const std::string comm = p.comm.empty() ? "python3" : p.comm;
    files[dir + "status"] =
        fmt::format("Name:\t{}\nPid:\t{}\nUid:\t{}\t{}\t{}\t{}\n", comm, p.pid, uid, uid, uid, uid);
    files[dir + "comm"] = comm + "\n";
    files[dir + "environ"] = environ;
  }
  std::string passwd = "root:x:0:0:root:/root:/bin/bash\n";
  for (const auto& [user, uid] : uids)
    passwd += fmt::format("{0}:x:{1}:{1}::/home/{0}:/bin/bash\n", user, uid);
  files["/etc/passwd"] = passwd;
  return files;
}

KubeLists KubeListsFor(const std::string& node, const std::vector<Grant>& grants,
                       const std::set<ConsumerRef>& running, const std::set<ConsumerRef>& ended,
                       const std::vector<PhysicalGpu>& gpus,
                       const std::vector<MigInstance>& mig_instances) {
  KubeLists out;
  // Grants grouped per container and resource, as the kubelet lists them.
  std::map<std::pair<ConsumerRef, std::string>, kubelet::ContainerGrant> grouped;
  std::map<std::string_view, int> hami_slot;  // next HAMi slot per GPU
  for (const Grant& g : grants) {
    auto& cg = grouped[{g.consumer, g.dra_claim.empty() ? g.resource_name : ""}];
    cg.namespace_name = g.consumer.namespace_name;
    cg.pod = g.consumer.pod;
    cg.container = g.consumer.container;
    if (g.dra_claim.empty() && g.resource_name == kGpuMilliResource && g.declared_ppd) {
      // A fractional device plugin advertises one device per thousandth of a GPU and grants as
      // many as the pod asked for: "<gpu>::milli-<k>".
      cg.resource_name = g.resource_name;
      const SharePpd milli = *g.declared_ppd / (kWholeGpu / 1000);
      for (SharePpd k = 0; k < milli; ++k)
        cg.device_ids.push_back(fmt::format("{}::milli-{}", BaseId(g.device_id), k));
    } else if (g.dra_claim.empty() && g.resource_name == kGpushareResource && g.declared_ppd) {
      // Alibaba GPU share: one fake id per GiB of the card's memory.
      cg.resource_name = g.resource_name;
      const PhysicalGpu* gpu = GpuOf(g.device_id, gpus);
      const std::int64_t gib = gpu ? ShareGib(*g.declared_ppd, *gpu) : 0;
      for (std::int64_t k = 0; k < gib; ++k)
        cg.device_ids.push_back(fmt::format("{}-_-{}", BaseId(g.device_id), k));
    } else if (const PhysicalGpu* gpu = GpuOf(g.device_id, gpus);
               g.dra_claim.empty() && g.declared_ppd && gpu &&
               gpu->sharing == SharingMode::kFractional) {
      // HAMi: a slot of the GPU, and the share as one gpucores id per percent.
      cg.resource_name = g.resource_name;
      cg.device_ids.push_back(
          fmt::format("{}-{}", BaseId(g.device_id), hami_slot[BaseId(g.device_id)]++));
      if (*g.declared_ppd % (kWholeGpu / 100) == 0) {
        auto& cores = grouped[{g.consumer, "nvidia.com/gpucores"}];
        cores.namespace_name = g.consumer.namespace_name;
        cores.pod = g.consumer.pod;
        cores.container = g.consumer.container;
        cores.resource_name = "nvidia.com/gpucores";
        for (SharePpd k = 0; k < *g.declared_ppd / (kWholeGpu / 100); ++k)
          cores.device_ids.push_back(fmt::format("gpucores-{}", cores.device_ids.size()));
      }
    } else if (g.dra_claim.empty()) {
      cg.resource_name = g.resource_name;
      cg.device_ids.push_back(g.device_id);
    } else {
      cg.dra.push_back(kubelet::DraDevice{g.dra_claim,
                                          "gpu.nvidia.com",
                                          node,
                                          "",
                                          "",
                                          {"k8s.gpu.nvidia.com/device=" + g.device_id}});
    }
  }
  for (auto& [key, g] : grouped) out.grants.push_back(std::move(g));
  for (const PhysicalGpu& gpu : gpus) {
    bool mig = false;
    for (const MigInstance& m : mig_instances)
      if (m.parent == gpu.uuid) {
        mig = true;
        out.allocatable.push_back({"nvidia.com/mig-" + m.profile, m.uuid.value});
      }
    if (mig) continue;
    if (gpu.replicas > 1)
      for (int r = 0; r < gpu.replicas; ++r)
        out.allocatable.push_back({"nvidia.com/gpu", fmt::format("{}::{}", gpu.uuid.value, r)});
    else
      out.allocatable.push_back({"nvidia.com/gpu", gpu.uuid.value});
  }
  std::set<std::string> seen_pods;
  auto add = [&](const ConsumerRef& ref, bool ready) {
    std::string sandbox =
        ContainerIdFor(ConsumerRef{ref.namespace_name, ref.pod, ref.pod_uid, "__sandbox__"});
    if (seen_pods.insert(sandbox).second)
      out.sandboxes.push_back(
          cri::PodSandbox{sandbox, ref.pod, ref.namespace_name, ref.pod_uid.value, ready, {}});
    out.containers.push_back(cri::Container{ContainerIdFor(ref), sandbox, ref.container, ready});
  };
  for (const ConsumerRef& ref : running) add(ref, true);
  for (const ConsumerRef& ref : ended)
    if (!running.count(ref)) add(ref, false);
  return out;
}

sources::GpuReading ReadingFor(const NodeSnapshot& snapshot,
                               std::map<std::string, MilliJoules>& energy_total_mj) {
  sources::GpuReading r;
  r.start_us = snapshot.start_us;
  r.end_us = snapshot.end_us;
  r.mig_instances = snapshot.mig_instances;
  r.signals = snapshot.signals;
  for (PhysicalGpu gpu : snapshot.gpus) {
    gpu.sharing = SharingMode::kExclusive;  // the agent infers sharing and replicas
    gpu.replicas = 1;
    sources::GpuInstantaneous g;
    g.device = gpu.uuid;
    g.product_name = gpu.model;
    g.memory_total_bytes = gpu.memory_total_bytes;
    for (const DeviceSignals& s : snapshot.signals) {
      if (s.device != gpu.uuid) continue;
      g.memory_used_bytes = s.memory_used_bytes;
      MilliJoules& total = energy_total_mj[gpu.uuid.value];
      total += s.energy_mj.value_or(0);
      g.energy_total_mj = total;
      const Micros dt = snapshot.duration_us();
      if (dt > 0 && s.energy_mj) g.power_mw = *s.energy_mj * kMicrosPerSecond / dt;
      if (dt > 0 && s.busy_us) g.utilization_percent = static_cast<int>(*s.busy_us * 100 / dt);
    }
    r.instant.push_back(std::move(g));
    r.gpus.push_back(std::move(gpu));
  }
  for (ProcessObservation p : snapshot.processes) {
    p.consumer.reset();  // the agent resolves PIDs through procfs, the kubelet and CRI
    p.host_name.clear();
    p.visible_devices.clear();
    // NVML lists an MPS node's processes but the server among the device's MPS clients.
    const PhysicalGpu* gpu = GpuOf(p.device.value, snapshot.gpus, &snapshot.mig_instances);
    p.mps_client = gpu != nullptr && gpu->sharing == SharingMode::kMps && !IsMpsServer(p.comm);
    r.processes.push_back(std::move(p));
  }
  return r;
}

void SimulatedNode::Show(const NodeSnapshot& snapshot) {
  reading_ = ReadingFor(snapshot, energy_total_mj_);
  shown_ = true;
  files_ = ProcfsFiles(snapshot.processes, snapshot.grants, snapshot.gpus, uids_);
  std::set<ConsumerRef> running, ended;
  for (const Grant& g : snapshot.grants) running.insert(g.consumer);
  for (const ProcessObservation& p : snapshot.processes)
    if (p.consumer) running.insert(*p.consumer);
  // Terminal pods the kubelet still lists: their grants, and a sandbox that is not ready.
  std::vector<Grant> listed = snapshot.grants;
  for (const Grant& g : snapshot.terminal_grants) {
    listed.push_back(g);
    ended.insert(g.consumer);
  }
  kube_ = KubeListsFor(node_, listed, running, ended, snapshot.gpus, snapshot.mig_instances);
}

Result<sources::GpuReading> SimulatedNode::Read() {
  if (!shown_) return Unavailable("simulated node " + node_ + ": no interval shown yet");
  return reading_;
}

Result<std::string> SimulatedNode::Read(std::string_view path) {
  auto it = files_.find(std::string(path));
  if (it == files_.end()) return NotFound(fmt::format("{}: no such file", path));
  return it->second;
}

Result<std::vector<std::string>> SimulatedNode::List(std::string_view path) {
  std::string dir(path);
  if (!dir.ends_with('/')) dir += '/';
  std::set<std::string> names;
  for (auto it = files_.lower_bound(dir); it != files_.end() && it->first.starts_with(dir); ++it) {
    std::string rest = it->first.substr(dir.size());
    names.insert(rest.substr(0, rest.find('/')));
  }
  if (names.empty()) return NotFound(fmt::format("{}: no such directory", path));
  return std::vector<std::string>(names.begin(), names.end());
}

bool SimulatedNode::Exists(std::string_view path) {
  std::string p(path);
  auto it = files_.lower_bound(p);
  return it != files_.end() && (it->first == p || it->first.starts_with(p + "/"));
}

}  // namespace gpuledger::sim
