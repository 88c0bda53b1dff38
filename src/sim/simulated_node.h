#pragma once
// What the agent's real interfaces show on a simulated node: the procfs files, the kubelet's
// PodResources lists, the CRI runtime's lists and the GPU reading, as pure functions of what the
// simulator says is on the node. `gpuledger-sim-node` serves them through the real files and
// sockets (the NVML stand-in serves the GPUs); SimulatedNode serves them in memory to real
// Collectors (the demo, the engine tests). Both read them from here, so the two paths cannot drift
// apart.

#include <map>
#include <set>
#include <string>
#include <vector>

#include "io/file_reader.h"
#include "model/snapshot.h"
#include "sources/cri/runtime.h"
#include "sources/gpu_source.h"
#include "sources/kubelet/pod_resources.h"

namespace gpuledger::sim {

// Host processes' users get stable uids from 1000 on, in order of first appearance.
using HostUids = std::map<std::string, int>;

// The files of /proc/<pid>/{cgroup,status,comm,environ} for each process, and /etc/passwd,
// keyed by absolute path ("/proc/42/cgroup"). The environment carries NVIDIA_VISIBLE_DEVICES
// and what the sharing layer sets: CUDA_MPS_PIPE_DIRECTORY on an MPS GPU (with
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE when the grant declares a share) and HAMi's
// CUDA_DEVICE_SM_LIMIT for a fractional share that is a whole percent.
std::map<std::string, std::string> ProcfsFiles(const std::vector<ProcessObservation>& processes,
                                               const std::vector<Grant>& grants,
                                               const std::vector<PhysicalGpu>& gpus,
                                               HostUids& uids);

// The extended resource of fractional sharing by thousandths (as Alibaba's GPU-sharing
// scheduler names it in its cluster trace): granted as that many device ids "<gpu>::milli-<k>".
inline constexpr std::string_view kGpuMilliResource = "gpu_milli";

// How each fractional layer (NodeSpec::fractional_layer) shows a declared share to the agent,
// as the real device plugins do (agent/sharing_declarations.h names the origins):
//   gpu-milli  resource gpu_milli, one id "<gpu>::milli-<k>" per thousandth;
//   hami       resource nvidia.com/gpu with the slot id "<gpu>-<n>", nvidia.com/gpucores with
//              one id per percent (whole percents only), and HAMi-core's CUDA_DEVICE_SM_LIMIT
//              and CUDA_DEVICE_MEMORY_LIMIT_0 (the share of the card's memory, MiB) in the
//              environment;
//   gpushare   resource aliyun.com/gpu-mem, one id "<gpu>-_-<k>" per GiB (the share of the
//              card's memory, rounded to whole GiB), and ALIYUN_COM_GPU_MEM_IDX/_CONTAINER/_DEV
//              in the environment.
std::string FractionalResource(std::string_view fractional_layer);

// The cgroup directories a simulated node's kubelet (systemd driver, burstable QoS) gives a pod
// and one of its containers, as /proc/<pid>/cgroup and /sys/fs/cgroup name them.
std::string PodCgroupDir(std::string_view pod_uid);
std::string ContainerCgroupDir(std::string_view pod_uid, std::string_view container_id);

struct KubeLists {
  std::vector<kubelet::ContainerGrant> grants;
  std::vector<kubelet::AllocatableDevice> allocatable;
  std::vector<cri::PodSandbox> sandboxes;
  std::vector<cri::Container> containers;
};

// The kubelet's and the runtime's view: grants grouped per container and resource, the node's
// allocatable devices, a ready sandbox and a running container per `running` consumer and a
// not-ready one per `ended` consumer (terminal pods linger).
KubeLists KubeListsFor(const std::string& node, const std::vector<Grant>& grants,
                       const std::set<ConsumerRef>& running, const std::set<ConsumerRef>& ended,
                       const std::vector<PhysicalGpu>& gpus,
                       const std::vector<MigInstance>& mig_instances);

// What NVML would report for the interval of `snapshot`: devices without the sharing the agent
// infers, processes without consumers (the agent resolves their PIDs), signals, and gauges.
// `energy_total_mj` carries each GPU's energy counter from one call to the next.
sources::GpuReading ReadingFor(const NodeSnapshot& snapshot,
                               std::map<std::string, MilliJoules>& energy_total_mj);

// One simulated node in memory, behind the agent's real source interfaces. Show() a snapshot,
// then run a Collector cycle: its reading is that snapshot's interval, its procfs, kubelet and
// runtime are what was on the node then. Not thread-safe; one collector.
class SimulatedNode final : public sources::GpuSource,
                            public FileReader,
                            public kubelet::PodResourcesClient,
                            public cri::RuntimeClient {
 public:
  explicit SimulatedNode(std::string node) : node_(std::move(node)) {}

  void Show(const NodeSnapshot& snapshot);

  Result<sources::GpuReading> Read() override;
  std::string Describe() const override { return "simulated node " + node_; }

  Result<std::string> Read(std::string_view path) override;
  Result<std::vector<std::string>> List(std::string_view path) override;
  bool Exists(std::string_view path) override;
  std::string Resolve(std::string_view path) const override { return std::string(path); }

  Result<std::vector<kubelet::ContainerGrant>> List() override { return kube_.grants; }
  Result<std::vector<kubelet::AllocatableDevice>> GetAllocatableResources() override {
    return kube_.allocatable;
  }
  Result<std::vector<cri::Container>> ListContainers() override { return kube_.containers; }
  Result<std::vector<cri::PodSandbox>> ListPodSandbox() override { return kube_.sandboxes; }

 private:
  std::string node_;
  sources::GpuReading reading_;
  bool shown_ = false;
  std::map<std::string, std::string> files_;
  std::map<std::string, MilliJoules> energy_total_mj_;
  HostUids uids_;
  KubeLists kube_;
};

}  // namespace gpuledger::sim
