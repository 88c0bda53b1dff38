#pragma once
// Kubelet PodResources v1 client: what the kubelet granted each container. The gRPC client
// lives beside this (grpc_pod_resources.*); parsers turn proto messages into these values.

#include <memory>
#include <string>
#include <vector>

#include "common/result.h"

namespace gpuledger::kubelet {

struct DraDevice {
  std::string claim;   // "namespace/claim_name"
  std::string driver;  // "gpu.nvidia.com"
  std::string pool;
  std::string device;                    // driver's device name, e.g. "gpu-0"
  std::string share_id;                  // set for shared (partitionable / consumable) claims
  std::vector<std::string> cdi_devices;  // "nvidia.com/gpu=GPU-<uuid>" style names
};

struct ContainerGrant {
  std::string namespace_name;
  std::string pod;  // PodResources has no pod UID: CRI supplies it
  std::string container;
  std::string resource_name;  // "nvidia.com/gpu", "nvidia.com/mig-3g.40gb", ...; empty for DRA
  std::vector<std::string> device_ids;  // "GPU-<uuid>", "GPU-<uuid>::3", "MIG-<uuid>", ".../vgpu2"
  std::vector<DraDevice> dra;
};

struct AllocatableDevice {
  std::string resource_name;
  std::string device_id;
};

class PodResourcesClient {
 public:
  virtual ~PodResourcesClient() = default;
  // Every container's device grants (containers without devices omitted). Terminal pods may be
  // included by some kubelets: the agent filters them with CRI.
  virtual Result<std::vector<ContainerGrant>> List() = 0;
  virtual Result<std::vector<AllocatableDevice>> GetAllocatableResources() = 0;
};

// Connects lazily to a unix socket path; a missing socket is kUnavailable on each call (the
// kubelet restarts), RESOURCE_EXHAUSTED backs off (kUnavailable, "rate limited").
std::unique_ptr<PodResourcesClient> MakeGrpcPodResourcesClient(const std::string& socket_path);

}  // namespace gpuledger::kubelet
