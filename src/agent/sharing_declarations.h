#pragma once
// What the GPU-sharing layers on a node declare a container was given, from the two places they
// declare it, each convention with its origin:
//
// PodResources (the kubelet's List; resource names and device ids as each device plugin
// registers them):
//   gpu_milli               "<gpu>::milli-<k>" ids, one per thousandth of a GPU (the extended
//                           resource of Alibaba's GPU-sharing cluster trace, cluster-trace-gpu-
//                           v2023): the share is their count / 1000.
//   aliyun.com/gpu-mem,     one fake id "<gpu uuid>-_-<k>" per GiB (AliyunContainerService/
//   alibabacloud.com/gpu-mem  gpushare-device-plugin): a memory-only declaration, so the share is
//                           that memory over the device's. The kubelet picks the fake ids, not
//                           the GPU: the scheduler's choice is ALIYUN_COM_GPU_MEM_IDX in the
//                           container's environment, which moves the grant when seen.
//   nvidia.com/gpucores,    HAMi's per-device SM percent and memory MiB, registered one device
//   nvidia.com/gpumem       per unit by HAMi's mock device plugin (Project-HAMi/mock-device-
//                           plugin): they apply to the container's nvidia.com/gpu grants. HAMi's
//                           own device ids "GPU-<uuid>-<n>" are slots of one GPU (a replica).
//
// The environment of the container's GPU processes (procfs::SharingEnv), used where the grant
// declares nothing itself: MPS clients (CUDA_MPS_PIPE_DIRECTORY) with their active-thread
// percentage and pinned memory limit, HAMi-core's CUDA_DEVICE_SM_LIMIT and
// CUDA_DEVICE_MEMORY_LIMIT, Alibaba's ALIYUN_COM_GPU_MEM_*.
//
// KAI/Run:ai fractions are pod annotations the agent cannot read (it has no API credentials):
// the server joins them from its pod watch.

#include <optional>
#include <string>
#include <vector>

#include "model/snapshot.h"
#include "sources/gpu_source.h"
#include "sources/kubelet/pod_resources.h"
#include "sources/procfs/proc_source.h"

namespace gpuledger::agent {

inline constexpr std::string_view kAliyunGpuMem = "aliyun.com/gpu-mem";
inline constexpr std::string_view kAlibabaCloudGpuMem = "alibabacloud.com/gpu-mem";
inline constexpr std::string_view kHamiGpuCores = "nvidia.com/gpucores";
inline constexpr std::string_view kHamiGpuMem = "nvidia.com/gpumem";
// IsMpsServer, which tells the MPS server process by its comm, is in model/snapshot.h.

// The grants of one container from its PodResources entries (all resources of it), with the
// shares and memory caps they declare.
std::vector<Grant> DeclaredGrants(const ConsumerRef& ref,
                                  const std::vector<const kubelet::ContainerGrant*>& lists,
                                  const sources::GpuReading& reading);

// What one process's environment declares for its consumer on a GPU.
struct EnvDeclaration {
  GpuUuid gpu;                        // the physical GPU the declaration is for
  bool mps = false;                   // an MPS client: the GPU runs MPS
  std::optional<SharePpd> ppd;        // the declared share of the GPU
  std::optional<Bytes> memory_bytes;  // the declared memory cap
  std::string share_source;           // "env:<VARIABLE>" that gave ppd
  bool from_gpushare_index = false;   // `gpu` is Alibaba's ALIYUN_COM_GPU_MEM_IDX, not NVML's
};
// nullopt when the environment declares nothing. `gpu` is the GPU NVML saw the process on.
std::optional<EnvDeclaration> FromEnvironment(const procfs::SharingEnv& env, const GpuUuid& gpu,
                                              const sources::GpuReading& reading);

// The physical GPU of a GPU or MIG uuid in the reading (itself when unknown).
GpuUuid PhysicalOf(const GpuUuid& device, const sources::GpuReading& reading);

// `memory` as a share of the GPU's memory, at most the whole GPU; nullopt when the GPU's memory
// is unknown.
std::optional<SharePpd> MemoryShare(Bytes memory, const GpuUuid& gpu,
                                    const sources::GpuReading& reading);

}  // namespace gpuledger::agent
