#pragma once
// NodeSnapshot: everything one node observed over one interval [start_us, end_us). The agent
// builds it from NVML, procfs, PodResources and CRI; the simulator builds the same thing from a
// scenario. Attribution is a pure function of it.
//
// Usage signals are integrals over the interval, not instantaneous values: the agent sums
// NVML's samples (utilization percent x sample period) since the previous cycle, so a snapshot
// over 1 s and one over 60 s mean the same thing.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/ids.h"
#include "common/units.h"
#include "model/activity.h"
#include "model/consumer.h"
#include "model/sharing.h"

namespace gpuledger {

struct PhysicalGpu {
  GpuUuid uuid;       // GPU-<uuid>
  std::string model;  // catalog name: "H100-80GB", "A100-40GB", "L4", "T4", ...
  Bytes memory_total_bytes = 0;
  SharingMode sharing = SharingMode::kExclusive;
  int replicas = 1;      // time-slicing or MPS replicas advertised per GPU (or per MIG instance)
  int total_slices = 7;  // MIG compute slices of the whole GPU (7; A30: 4)
};

struct MigInstance {
  GpuUuid uuid;         // MIG-<uuid>
  GpuUuid parent;       // the physical GPU
  std::string profile;  // "3g.71gb"
  int compute_slices = 1;
  Bytes memory_total_bytes = 0;
  // NVML's GPU instance id (nvmlDeviceGetGpuInstanceId): what GPM and DCGM (GPU_I_ID) name the
  // instance by. Unset when unknown.
  std::optional<int> gpu_instance_id;
};

// What Kubernetes granted one container: a device id as the device plugin or DRA reports it.
struct Grant {
  ConsumerRef consumer;
  std::string device_id;      // "GPU-<uuid>", "GPU-<uuid>::<n>", "MIG-<uuid>", "MIG-<uuid>::<n>"
  std::string resource_name;  // "nvidia.com/gpu", "nvidia.com/mig-3g.71gb", "gpu_milli", DRA driver
  // A declared share of the physical GPU that overrides the mode's default: fractional sharing
  // (gpu_milli, HAMi gpucores) and MPS active-thread percentages. Unset: the mode decides.
  std::optional<SharePpd> declared_ppd;
  std::string dra_claim;  // DRA: "namespace/claim"; pods naming one shared claim split it
  // A declared cap on the GPU memory the container may use (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT,
  // HAMi's CUDA_DEVICE_MEMORY_LIMIT, Alibaba's gpu-mem). Recorded for rightsizing and
  // guardrails; a memory-only declaration also sets declared_ppd (its share of the device).
  std::optional<Bytes> declared_memory_bytes;
  // Where declared_ppd came from, for the ledger row: "env:CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
  // "env:CUDA_DEVICE_SM_LIMIT", "resource:aliyun.com/gpu-mem", "annotation:gpu-fraction", ...
  std::string share_source;
};

// The process NVIDIA's MPS control daemon starts per device and user: the sharing layer itself,
// on the GPU but nobody's workload. Its name is nvidia-cuda-mps-server, but Linux keeps only 15
// bytes of a name in /proc/<pid>/comm (TASK_COMM_LEN), so that reads "nvidia-cuda-mps", as the
// control daemon's does; the control daemon never holds a GPU context, so a GPU process named
// so is the server.
inline constexpr std::string_view kMpsServerComm = "nvidia-cuda-mps";
// Whether a GPU process's comm is the MPS server's (the full name too, from tools that give it).
inline bool IsMpsServer(std::string_view comm) {
  return comm == kMpsServerComm || comm == "nvidia-cuda-mps-server";
}

// One GPU process seen during the interval.
struct ProcessObservation {
  int pid = 0;
  GpuUuid device;                       // physical GPU, or the MIG instance it runs in
  std::optional<ConsumerRef> consumer;  // unset: in no container (see host_name)
  std::string host_name;                // consumer name when not in a pod: "user:alice", ...
  Bytes used_memory_bytes = 0;          // NVML per-process memory (exact)
  // SM busy time integrated from per-process utilization samples (smUtil% x sample period).
  // Unset when NVML gives none for this process (MIG, most MPS clients). Zero when it gave
  // samples with 0%, or none because the process was not busy in the last sample period.
  std::optional<GpuMicros> sm_busy_us;
  std::string visible_devices;       // NVIDIA_VISIBLE_DEVICES of the process, if read
  std::string cuda_visible_devices;  // CUDA_VISIBLE_DEVICES of the process, if read
  std::string comm;                  // /proc/<pid>/comm; empty when the process was not read
  // NVML listed it among the device's MPS clients (nvmlDeviceGetMPSComputeRunningProcesses_v3):
  // the device runs an MPS server.
  bool mps_client = false;
  // The process's own kernel time on `device` over the interval (the union of its kernels, from
  // the in-process tracer's file, sources/kerneltime/), when it publishes one the agent accepted.
  std::optional<GpuMicros> kernel_busy_us;
  // Its PID in its innermost PID namespace (the container's; /proc/<pid>/status NSpid), which
  // is what a program inside calls itself; 0 when unknown (then `pid`).
  int namespace_pid = 0;
};

// Device-level signals for a physical GPU or a MIG instance, integrated over the interval.
struct DeviceSignals {
  GpuUuid device;
  // Time any kernel ran (NVML utilization.gpu x period). For a MIG instance: the instance's own
  // activity, relative to the instance (DCGM GR_ENGINE_ACTIVE), when DCGM is present; NVML gives
  // none on MIG. Unset when unknown.
  std::optional<GpuMicros> busy_us;
  Bytes memory_used_bytes = 0;
  std::optional<MilliJoules> energy_mj;  // energy used during the interval (counter delta)
  SignalSource busy_source = SignalSource::kNvml;  // kGpm/kDcgm: a MIG instance's own counters
  // SM, tensor and DRAM activity relative to the unit (GPM on Hopper and newer, else
  // dcgm-exporter's profiling fields); unset when no source gives them.
  std::optional<Activity> activity;
  SignalSource activity_source = SignalSource::kNone;
};

// What a node's devices showed over an interval [start_us, end_us): the part of a snapshot that
// its GPU source gives.
struct DeviceInterval {
  Micros start_us = 0;
  Micros end_us = 0;
  std::vector<PhysicalGpu> gpus;
  std::vector<MigInstance> mig_instances;
  std::vector<DeviceSignals> signals;  // integrals over [start_us, end_us)
};

struct NodeSnapshot : DeviceInterval {
  std::string node;
  std::vector<Grant> grants;
  std::vector<ProcessObservation> processes;
  // Grants the kubelet still lists for pods that are not running (kubernetes#119423): never
  // attributed (the device may be someone else's by now), only reported (stale-grant).
  std::vector<Grant> terminal_grants;

  Micros duration_us() const { return end_us - start_us; }
};

}  // namespace gpuledger
