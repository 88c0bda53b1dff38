#pragma once
// A simulator scenario, parsed and validated from YAML (docs/scenarios.md).
//
// ParseScenario also resolves every pod's placement (first fit, time-aware), so a Scenario that
// parsed is fully placed: the Simulator never fails.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/units.h"
#include "model/sharing.h"

namespace gpuledger::sim {

// A piecewise-constant time series of activity (fraction of the granted unit), loaded from a CSV
// at parse time. Offsets are relative to the first sample; the series repeats after period_us.
struct Series {
  std::vector<Micros> offset_us;  // ascending, offset_us[0] == 0
  std::vector<double> value;      // holds until the next offset: a fraction in [0, 1] (compute)
                                  // or bytes (memory)
  std::vector<double> prefix;     // prefix[i] = ∫ over [0, offset_us[i]) (value x µs)
  Micros period_us = 0;           // last offset + the median sample spacing
};

enum class ProfileKind { kIdle, kConstant, kPeriodic, kBursty, kSeries };

// Compute demand of one pod (or host process) on each device it holds, as a fraction of the
// granted unit (whole GPU, MIG instance, or MPS SM share), relative to the pod's start.
struct ComputeProfile {
  ProfileKind kind = ProfileKind::kIdle;
  double duty = 0;                       // constant, periodic (level while on), bursty (mean)
  Micros period_us = 0;                  // periodic
  Micros on_us = 0;                      // periodic
  Micros burst_us = 0;                   // bursty: length of one random on/off slot
  std::uint64_t seed = 0;                // bursty: derived from the scenario seed and the workload
  std::shared_ptr<const Series> series;  // series
};

// What one pod's (or host process's) busy time does inside the GPU: the hidden efficiency that
// SM, tensor and DRAM activity counters (GPM, DCGM profiling) reveal and utilization.gpu does
// not. Ratios in [0, 1]; per workload, constant over its life (docs/scenarios.md).
struct EfficiencyProfile {
  double sm_active = 0.6;      // SMs with a warp resident, per unit of busy time
  double sm_occupancy = 0.35;  // resident warps / the SMs' maximum, per unit of SM active
  double tensor_active = 0.3;  // a tensor pipe busy, per unit of SM active
  double dram_active = 0.4;    // DRAM bandwidth used / peak, per unit of busy time
};

// Memory held on each device while running: bytes, a sawtooth from bytes to peak over period,
// or a series of bytes from a CSV (a real trace's memory, held between samples).
struct MemoryProfile {
  Bytes bytes = 0;
  Bytes peak_bytes = 0;  // 0: constant
  Micros period_us = 0;
  std::shared_ptr<const Series> series;  // when set, bytes/peak/period are unused
};

struct HostProcessSpec {
  std::string name;  // consumer name, e.g. "user:alice"
  int gpu = 0;
  ComputeProfile compute;
  EfficiencyProfile efficiency;
  MemoryProfile memory;
  Micros start_us = 0;  // offsets from the scenario start
  Micros end_us = 0;
};

struct NodeSpec {
  std::string name;
  std::string gpu_model;  // catalog model name, e.g. "H100-80GB"
  int gpus = 1;
  Bytes memory_per_gpu_bytes = 0;  // defaults from the model when omitted
  SharingMode sharing = SharingMode::kExclusive;
  int replicas = 1;                     // time-slicing / MPS replicas per GPU
  std::vector<std::string> mig_layout;  // MIG: profiles per GPU, e.g. [3g.71gb, 2g.35gb]
  int total_slices = 7;                 // MIG compute slices of the model (A30: 4)
  std::string pricing_class = "on-demand";
  std::string region;
  std::map<std::string, std::string> labels;
  // dcgm-exporter runs: MIG instances report their own busy time and every unit its SM, tensor
  // and DRAM activity (signal source kDcgm), whatever the model.
  bool has_dcgm = false;
  // How a fractional node's device plugin declares shares (simulated_node.h lays it out):
  // "gpu-milli" (thousandths, as in Alibaba's trace), "hami" (HAMi: gpucores/gpumem and
  // HAMi-core's environment), "gpushare" (Alibaba GPU share: aliyun.com/gpu-mem, GiB).
  std::string fractional_layer = "gpu-milli";
  std::vector<HostProcessSpec> host_processes;
};

// One granted unit of a placed pod: a GPU, a replica of it, a MIG instance (or its replica).
struct PodGrantPlan {
  int gpu = 0;
  int mig = -1;               // index into the GPU's mig_layout; -1: the whole GPU
  int replica = -1;           // time-slicing / MPS / MIG replica; -1: none
  SharePpd declared_ppd = 0;  // fractional and MPS active-thread percentage; 0: unset
  std::string dra_claim;      // DRA: "namespace/claim"
};

struct PodPlan {
  std::string name;
  std::string uid;
  int node = -1;                     // index into Scenario::nodes
  std::vector<PodGrantPlan> grants;  // empty for `request: none`
  int uses_gpu = -1;                 // `request: none`: the GPU index its process runs on
};

// An inference engine a workload's pods run (issue 63, docs/scenarios.md): its token counters
// follow the pod's true GPU busy time (physical-GPU seconds), and its pods opt in to being
// scraped, so the server books them as it books a real engine's.
struct InferenceSpec {
  std::string engine;  // vllm | sglang | tgi | triton: the metrics it exposes
  std::string model;
  double input_per_gpu_second = 0;   // prompt tokens per second of GPU busy time
  double output_per_gpu_second = 0;  // generated tokens per second of GPU busy time
  double output_per_request = 256;   // generated tokens of a request, on average
  double prefill_share = 0.25;       // of the busy time, spent in prefill (vllm, tgi report it)
};

struct WorkloadSpec {
  int line = 0;  // 1-based line in the scenario file, for messages
  std::string namespace_name;
  std::string name;
  std::string owner_kind = "Deployment";
  std::string owner_name;
  std::map<std::string, std::string> labels;
  int replicas = 1;
  std::string container = "main";
  std::string node;       // constraint, or empty
  std::string gpu_model;  // constraint, or empty
  int gpus = 1;
  std::string mig_profile;
  std::optional<SharePpd> fraction_ppd;  // fraction or gpu_milli, as ppd of the GPU
  std::optional<int> mps_active_thread_percentage;
  std::string dra_claim;  // claim name, or empty
  bool dra_shared = false;
  Micros start_us = 0;  // offsets from the scenario start
  Micros end_us = 0;
  int processes = 1;  // per device held
  ComputeProfile compute;
  EfficiencyProfile efficiency;
  MemoryProfile memory;
  std::string placement_node;  // explicit placement, or empty
  std::vector<int> placement_gpus;
  bool request_none = false;  // misbehaviour: no GPU grant
  std::string uses_gpu_node;
  int uses_gpu_index = 0;
  bool visible_devices_all = false;
  // Misbehaviour: the kubelet keeps listing the pod's grants for this long after it ended
  // (kubernetes#119423), with its sandbox not ready: a stale grant.
  Micros grant_linger_us = 0;
  std::optional<InferenceSpec> inference;
  std::vector<PodPlan> pods;  // resolved by ParseScenario
};

struct Scenario {
  std::string name;
  std::string cluster = "default";
  std::uint64_t seed = 1;
  Micros start_us = 0;
  Micros duration_us = 0;
  std::vector<NodeSpec> nodes;
  std::map<std::string, std::map<std::string, std::string>> namespace_labels;
  std::vector<WorkloadSpec> workloads;
};

// The longest scenario: ten years of 366 days.
inline constexpr Micros kMaxScenarioUs = 10 * 366 * 24 * kMicrosPerHour;

// Compute slices of a MIG profile name ("3g.71gb" -> 3), or 0 when it is not one.
int MigComputeSlices(std::string_view profile);
// Default memory per GPU of a catalog model, or 0 when unknown.
Bytes DefaultGpuMemory(std::string_view gpu_model);
// Whether NVML GPM (GPU Performance Monitoring) works on a catalog model: Hopper and newer data
// center GPUs (H100, H200, H20, H800, GH200, B100, B200, B300, GB200, GB300); not A100, A30, L4,
// L40S, T4, V100 and older. The simulator and the NVML stand-in both decide by it.
bool GpmCapable(std::string_view gpu_model);

// Errors name file, line and field: "demo.yaml:12: workloads[3].compute.duty: expected a
// number in [0, 1], got 'high'".
Result<Scenario> ParseScenario(std::string_view yaml_text, std::string_view file_name);
Result<Scenario> LoadScenarioFile(const std::string& path);

// The built-in demo scenario (what `gpuledger sim example` prints and `demo` runs).
std::string_view ExampleScenarioYaml();

}  // namespace gpuledger::sim
