#include "agent/sharing_declarations.h"

#include <algorithm>
#include <map>

#include "attribution/attribute.h"

namespace gpuledger::agent {
namespace {

constexpr SharePpd kPercent = kWholeGpu / 100;

// "GPU-<uuid>-_-<k>" -> "GPU-<uuid>".
std::string GpushareGpu(const std::string& id) { return id.substr(0, id.find("-_-")); }

}  // namespace

GpuUuid PhysicalOf(const GpuUuid& device, const sources::GpuReading& reading) {
  for (const MigInstance& m : reading.mig_instances)
    if (m.uuid == device) return m.parent;
  return device;
}

std::optional<SharePpd> MemoryShare(Bytes memory, const GpuUuid& gpu,
                                    const sources::GpuReading& reading) {
  for (const PhysicalGpu& g : reading.gpus) {
    if (g.uuid != gpu || g.memory_total_bytes <= 0) continue;
    const __int128 share =
        static_cast<__int128>(std::max<Bytes>(0, memory)) * kWholeGpu / g.memory_total_bytes;
    return static_cast<SharePpd>(std::min<__int128>(share, kWholeGpu));
  }
  return std::nullopt;
}

std::vector<Grant> DeclaredGrants(const ConsumerRef& ref,
                                  const std::vector<const kubelet::ContainerGrant*>& lists,
                                  const sources::GpuReading& reading) {
  std::optional<SharePpd> hami_cores;
  std::optional<Bytes> hami_memory;
  for (const kubelet::ContainerGrant* g : lists) {
    const auto n = static_cast<std::int64_t>(g->device_ids.size());
    if (g->resource_name == kHamiGpuCores && n > 0)
      hami_cores = std::min<SharePpd>(n, 100) * kPercent;
    if (g->resource_name == kHamiGpuMem && n > 0) hami_memory = n * kMiB;
  }
  std::vector<Grant> out;
  for (const kubelet::ContainerGrant* g : lists) {
    const std::string& name = g->resource_name;
    if (name == kHamiGpuCores || name == kHamiGpuMem) continue;
    // Thousandths of a GPU: one grant per GPU declaring the sum.
    std::map<std::string, SharePpd> milli;
    for (const auto& id : g->device_ids)
      if (auto pos = id.find("::milli-"); pos != std::string::npos)
        milli[id.substr(0, pos)] += kWholeGpu / 1000;
    for (const auto& [gpu, share] : milli)
      out.push_back(Grant{ref, gpu, name, share, "", std::nullopt, "resource:" + name});
    if (name == kAliyunGpuMem || name == kAlibabaCloudGpuMem) {
      // GiB of one GPU: the GPU most of the fake ids name, until the environment says which.
      std::map<std::string, int> per_gpu;
      for (const auto& id : g->device_ids) ++per_gpu[GpushareGpu(id)];
      if (per_gpu.empty()) continue;
      auto most =
          std::max_element(per_gpu.begin(), per_gpu.end(),
                           [](const auto& a, const auto& b) { return a.second < b.second; });
      const Bytes memory = static_cast<Bytes>(g->device_ids.size()) * kGiB;
      out.push_back(Grant{ref, most->first, name,
                          MemoryShare(memory, GpuUuid{most->first}, reading), "", memory,
                          "resource:" + name});
      continue;
    }
    for (const auto& id : g->device_ids) {
      if (id.find("::milli-") != std::string::npos) continue;
      Grant grant{ref, id, name, std::nullopt, "", std::nullopt, ""};
      if (hami_cores) {
        grant.declared_ppd = hami_cores;
        grant.share_source = "resource:" + std::string(kHamiGpuCores);
      }
      if (hami_memory) {
        grant.declared_memory_bytes = hami_memory;
        if (!hami_cores) {
          const GpuUuid gpu =
              PhysicalOf(GpuUuid{std::string(attribution::BaseDeviceId(id))}, reading);
          grant.declared_ppd = MemoryShare(*hami_memory, gpu, reading);
          grant.share_source = "resource:" + std::string(kHamiGpuMem);
        }
      }
      out.push_back(std::move(grant));
    }
  }
  return out;
}

std::optional<EnvDeclaration> FromEnvironment(const procfs::SharingEnv& env, const GpuUuid& gpu,
                                              const sources::GpuReading& reading) {
  EnvDeclaration d;
  d.gpu = gpu;
  if (env.mps_client) {
    d.mps = true;
    if (env.mps_thread_percentage) {
      d.ppd = *env.mps_thread_percentage * kPercent;
      d.share_source = "env:CUDA_MPS_ACTIVE_THREAD_PERCENTAGE";
    }
    d.memory_bytes = env.mps_memory_limit_bytes;
    return d;
  }
  if (env.sm_limit_percentage || env.memory_limit_bytes) {
    d.memory_bytes = env.memory_limit_bytes;
    if (env.sm_limit_percentage) {
      d.ppd = *env.sm_limit_percentage * kPercent;
      d.share_source = "env:CUDA_DEVICE_SM_LIMIT";
    } else {
      d.ppd = MemoryShare(*env.memory_limit_bytes, gpu, reading);
      d.share_source = "env:CUDA_DEVICE_MEMORY_LIMIT";
    }
    return d;
  }
  if (env.gpushare_memory_bytes) {
    if (env.gpushare_gpu_index && *env.gpushare_gpu_index < static_cast<int>(reading.gpus.size())) {
      d.gpu = reading.gpus[static_cast<std::size_t>(*env.gpushare_gpu_index)].uuid;
      d.from_gpushare_index = true;
    }
    d.memory_bytes = env.gpushare_memory_bytes;
    if (env.gpushare_device_bytes && *env.gpushare_device_bytes > 0) {
      // The scheduler's own fraction: the container's GiB over the device's as it counts them.
      d.ppd = static_cast<SharePpd>(
          std::min<__int128>(static_cast<__int128>(*env.gpushare_memory_bytes) * kWholeGpu /
                                 *env.gpushare_device_bytes,
                             kWholeGpu));
    } else {
      d.ppd = MemoryShare(*env.gpushare_memory_bytes, d.gpu, reading);
    }
    d.share_source = "env:ALIYUN_COM_GPU_MEM_CONTAINER";
    return d;
  }
  return std::nullopt;
}

}  // namespace gpuledger::agent
