// The sharing modes and declared shares the agent derives from what a real node shows: the
// kubelet's resource names and device ids, NVML's MPS list, the processes' environment.
#include "agent/sharing_declarations.h"

#include <gtest/gtest.h>

#include <string>

#include "agent/node_view.h"

namespace gpuledger::agent {
namespace {

const std::string kGpuA = "GPU-1b2c3d4e-0000-4a4a-8b8b-123456789abc";
const std::string kGpuB = "GPU-9f8e7d6c-1111-4b4b-9c9c-cba987654321";
const std::string kContainerId(64, 'c');
constexpr SharePpd kPercent = kWholeGpu / 100;

struct Node {
  KubeView kube;
  sources::GpuReading reading;
  std::map<int, procfs::ProcessIdentity> identities;

  Node() {
    kube.present = true;
    kube.sandboxes.push_back({"sb1", "infer-0", "ml", "uid-1", true, {}});
    kube.containers.push_back({kContainerId, "sb1", "server", true});
    reading.start_us = 0;
    reading.end_us = kMicrosPerSecond;
    reading.gpus.push_back({GpuUuid{kGpuA}, "H100-80GB", 80 * kGiB, SharingMode::kExclusive, 1, 7});
    reading.gpus.push_back({GpuUuid{kGpuB}, "H100-80GB", 80 * kGiB, SharingMode::kExclusive, 1, 7});
  }
  void Grant(const std::string& resource, std::vector<std::string> ids) {
    kube.grants.push_back({"ml", "infer-0", "server", resource, std::move(ids), {}});
  }
  // A process of the container on `gpu` with this environment.
  void Process(const std::string& gpu, const std::string& environ, bool nvml_mps = false,
               std::string comm = "python3") {
    ProcessObservation p{42, GpuUuid{gpu}, std::nullopt, "", kGiB, std::nullopt, ""};
    p.mps_client = nvml_mps;
    reading.processes.push_back(p);
    procfs::ProcessIdentity id;
    id.pid = 42;
    id.comm = std::move(comm);
    id.container = procfs::CgroupRef{kContainerId, "uid-1", "containerd", {}};
    id.sharing = procfs::ParseSharingEnv(environ);
    identities[42] = id;
  }
  NodeSnapshot Build() {
    kube.Reindex();
    return BuildSnapshot("n", reading, kube, identities, nullptr);
  }
};

const PhysicalGpu& Gpu(const NodeSnapshot& s, const std::string& uuid) {
  for (const auto& g : s.gpus)
    if (g.uuid.value == uuid) return g;
  ADD_FAILURE() << uuid;
  return s.gpus.front();
}

std::vector<std::string> Ids(const std::string& prefix, int n) {
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) ids.push_back(prefix + std::to_string(i));
  return ids;
}

TEST(SharingDeclarations, AnMpsClientWithAThreadPercentageDeclaresItsShare) {
  using namespace std::string_literals;
  Node n;
  n.Grant("nvidia.com/gpu", {kGpuA + "::1"});
  n.kube.allocatable = {{"nvidia.com/gpu", kGpuA + "::0"},
                        {"nvidia.com/gpu", kGpuA + "::1"},
                        {"nvidia.com/gpu", kGpuA + "::2"},
                        {"nvidia.com/gpu", kGpuA + "::3"}};
  n.Process(kGpuA,
            "CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps\0CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30\0"
            "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=5GB,1=2G\0"s,
            /*nvml_mps=*/true);
  NodeSnapshot s = n.Build();
  EXPECT_EQ(Gpu(s, kGpuA).sharing, SharingMode::kMps);
  EXPECT_EQ(Gpu(s, kGpuA).replicas, 4);
  ASSERT_EQ(s.grants.size(), 1u);
  EXPECT_EQ(s.grants[0].declared_ppd, 30 * kPercent);
  EXPECT_EQ(s.grants[0].declared_memory_bytes, 5 * kGiB);
  EXPECT_EQ(s.grants[0].share_source, "env:CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
}

// NVML's MPS list, or the MPS server process, makes the device MPS even when no client's
// environment could be read (another user's process): replicas then split it evenly.
TEST(SharingDeclarations, NvmlsMpsListOrTheMpsServerMakeTheDeviceMps) {
  for (bool listed : {true, false}) {
    Node n;
    n.Grant("nvidia.com/gpu", {kGpuA + "::0"});
    n.kube.allocatable = {{"nvidia.com/gpu", kGpuA + "::0"}, {"nvidia.com/gpu", kGpuA + "::1"}};
    n.Process(kGpuA, "", listed, listed ? "python3" : std::string(kMpsServerComm));
    NodeSnapshot s = n.Build();
    EXPECT_EQ(Gpu(s, kGpuA).sharing, SharingMode::kMps) << listed;
    ASSERT_EQ(s.grants.size(), 1u);
    EXPECT_FALSE(s.grants[0].declared_ppd);
  }
}

// HAMi: slots "GPU-<uuid>-<n>" of nvidia.com/gpu, and the pod's gpucores / gpumem counted
// from their device ids, with no process running yet.
TEST(SharingDeclarations, HamiResourcesDeclareSharesWithoutAProcess) {
  Node n;
  n.Grant("nvidia.com/gpu", {kGpuA + "-3"});
  n.Grant("nvidia.com/gpucores", Ids("gpucores-", 30));
  n.Grant("nvidia.com/gpumem", Ids("gpumem-", 4096));
  NodeSnapshot s = n.Build();
  ASSERT_EQ(s.grants.size(), 1u);
  EXPECT_EQ(s.grants[0].device_id, kGpuA + "-3");
  EXPECT_EQ(s.grants[0].declared_ppd, 30 * kPercent);
  EXPECT_EQ(s.grants[0].declared_memory_bytes, 4 * kGiB);
  EXPECT_EQ(s.grants[0].share_source, "resource:nvidia.com/gpucores");
  EXPECT_EQ(Gpu(s, kGpuA).sharing, SharingMode::kFractional);
  EXPECT_EQ(Gpu(s, kGpuB).sharing, SharingMode::kExclusive);
}

// HAMi-core's memory cap alone (gpumem without gpucores) is a share of the device's memory.
TEST(SharingDeclarations, AHamiMemoryCapAloneIsAShareOfTheDeviceMemory) {
  using namespace std::string_literals;
  Node n;
  n.Grant("nvidia.com/gpu", {kGpuA});
  n.Process(kGpuA, "CUDA_DEVICE_MEMORY_LIMIT_0=20g\0"s);
  NodeSnapshot s = n.Build();
  ASSERT_EQ(s.grants.size(), 1u);
  EXPECT_EQ(s.grants[0].declared_ppd, kWholeGpu / 4);  // 20 GiB of 80 GiB
  EXPECT_EQ(s.grants[0].declared_memory_bytes, 20 * kGiB);
  EXPECT_EQ(s.grants[0].share_source, "env:CUDA_DEVICE_MEMORY_LIMIT");
  EXPECT_EQ(Gpu(s, kGpuA).sharing, SharingMode::kFractional);
}

// Alibaba's GPU share: one fake id per GiB, on whichever GPU the kubelet picked; the
// scheduler's GPU index in the environment moves the grant to the GPU it really runs on.
TEST(SharingDeclarations, AlibabaGpuMemIsAMemoryShareOnTheGpuTheSchedulerChose) {
  using namespace std::string_literals;
  Node n;
  n.Grant("aliyun.com/gpu-mem", Ids(kGpuA + "-_-", 20));
  NodeSnapshot before = n.Build();
  ASSERT_EQ(before.grants.size(), 1u);
  EXPECT_EQ(before.grants[0].device_id, kGpuA);
  EXPECT_EQ(before.grants[0].declared_ppd, kWholeGpu / 4);  // 20 GiB of 80 GiB
  EXPECT_EQ(before.grants[0].share_source, "resource:aliyun.com/gpu-mem");

  n.Process(
      kGpuB,
      "ALIYUN_COM_GPU_MEM_IDX=1\0ALIYUN_COM_GPU_MEM_CONTAINER=20\0ALIYUN_COM_GPU_MEM_DEV=80\0"s);
  NodeSnapshot s = n.Build();
  ASSERT_EQ(s.grants.size(), 1u);
  EXPECT_EQ(s.grants[0].device_id, kGpuB);
  EXPECT_EQ(s.grants[0].declared_ppd, kWholeGpu / 4);
  EXPECT_EQ(s.grants[0].declared_memory_bytes, 20 * kGiB);
  EXPECT_EQ(Gpu(s, kGpuB).sharing, SharingMode::kFractional);
  EXPECT_EQ(Gpu(s, kGpuA).sharing, SharingMode::kExclusive)
      << "only the kubelet's fake ids named it";
}

TEST(SharingDeclarations, MemoryShareIsCappedAtTheWholeGpu) {
  Node n;
  EXPECT_EQ(MemoryShare(160 * kGiB, GpuUuid{kGpuA}, n.reading), kWholeGpu);
  EXPECT_EQ(MemoryShare(kGiB, GpuUuid{"GPU-unknown"}, n.reading), std::nullopt);
}

}  // namespace
}  // namespace gpuledger::agent
