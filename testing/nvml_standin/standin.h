#pragma once
// The NVML stand-in's model (testing/nvml_standin/README.md): one simulated node followed in
// wall-clock time, folded into the per-device state NVML answers from. nvml_exports.cc maps the
// C entry points onto it. Everything here lives inside libnvidia-ml.so.1 and is hidden by its
// version script.

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/units.h"
#include "model/snapshot.h"
#include "sim/simulator.h"

namespace gpuledger::nvml_standin {

// The file GPULEDGER_NVML_SCENARIO names (YAML):
//   {scenario: <path>, node: <name>, origin_unix_us: <int>, step: "1s", faults: <path>}
// Relative paths resolve against the config file's folder.
struct Config {
  std::string scenario_path;
  std::string node;
  Micros origin_unix_us = 0;  // wall-clock µs that maps to the scenario's start
  Micros step_us = kMicrosPerSecond;
  std::string faults_path;  // empty: no fault control
};
Result<Config> ParseConfig(std::string_view yaml_text, const std::string& config_dir);

// The fault-control file, one directive a line ('#' starts a comment):
//   hang <function|all> <seconds>   the call sleeps that long, then answers normally
//   lost <gpu-index>                that GPU (and its MIG devices) answers GPU_IS_LOST
//   unsupported <function>          the call answers NOT_SUPPORTED
//   error <function|all> <code>     the call answers that NVML return code (number or name)
//   count <n>                       nvmlDeviceGetCount_v2 answers n
struct Faults {
  std::map<std::string, double> hang_s;  // by function name; "all" for every call
  std::set<unsigned> lost;
  std::set<std::string> unsupported;
  std::map<std::string, int> error;  // by function name; "all" for every call
  std::optional<unsigned> count;
  double HangFor(const std::string& fn) const;
  std::optional<int> ErrorFor(const std::string& fn) const;
};
// Unknown or malformed lines are errors naming the line (the caller keeps the previous faults).
Result<Faults> ParseFaults(std::string_view text);

// NVML's product name of a catalog model ("H100-80GB" -> "NVIDIA H100 80GB HBM3").
std::string ProductName(std::string_view gpu_model);
// MIG-capable models (A100, A30, H100, H200, ...).
bool MigCapable(std::string_view gpu_model);
// Streaming multiprocessors of the whole GPU.
unsigned SmCount(std::string_view gpu_model);

struct UtilSample {
  Micros ts_us;    // wall clock, the end of the interval
  unsigned value;  // percent (utilization) or mW (power)
};
struct ProcSample {
  Micros ts_us;
  unsigned pid;
  unsigned sm_util;  // percent
};
struct ProcMem {
  unsigned pid;
  Bytes used_bytes;
  unsigned gpu_instance_id;  // 0xFFFFFFFF without MIG
};
// A unit's GPM counters: ∫ fraction x µs since the scenario start, relative to the unit, of its
// graphics-busy time (DeviceSignals::busy_us) and activity (DeviceSignals::activity).
struct GpmCounters {
  double graphics_us = 0;
  double sm_active_us = 0;
  double sm_occupancy_us = 0;
  double tensor_active_us = 0;
  double dram_active_us = 0;
};
struct GpmPoint {
  Micros ts_us;   // wall clock, the end of an interval (the first: the scenario's start)
  GpmCounters c;  // the counters as of then
};

// One physical GPU or MIG device as NVML sees it.
struct Device {
  int gpu = 0;
  int mig = -1;  // index in the node's layout; -1: the physical GPU
  GpuUuid uuid;
  std::string name;
  Bytes total_bytes = 0;
  Bytes used_bytes = 0;
  unsigned gpu_instance_id = 0xFFFFFFFFu;
  int slices = 0;                    // MIG compute slices
  MilliJoules energy_mj = 0;         // Σ over every interval folded (physical only)
  MilliWatts power_mw = 0;           // the last interval's mean power
  std::deque<UtilSample> util;       // physical, not in MIG mode
  std::deque<UtilSample> power;      // physical
  std::deque<ProcSample> proc;       // physical, not MIG; on MPS the server's only
  std::vector<ProcMem> processes;    // current; a MIG-mode GPU lists its instances' processes too
  std::vector<ProcMem> mps_clients;  // current; MPS nodes: every process but the server
  std::deque<GpmPoint> gpm;          // GPM-capable models: the counters at each interval end
};

// The simulated node in wall-clock time. Not thread-safe: the exports hold one mutex.
class Node {
 public:
  // Loads the scenario, checks the node, and folds the history up to `now_wall_us`.
  static Result<Node> Open(const Config& config, Micros now_wall_us);

  // Folds the snapshots of the intervals that ended by now_wall_us (mapped to sim time:
  // scenario.start + now - origin). Past the scenario's end nothing changes.
  void AdvanceTo(Micros now_wall_us);

  const Config& config() const { return config_; }
  const sim::NodeSpec& spec() const { return stepper_->node(); }
  bool mig_mode() const { return spec().sharing == SharingMode::kMig; }
  bool mps() const { return spec().sharing == SharingMode::kMps; }
  int gpu_count() const { return static_cast<int>(spec().gpus); }
  int mig_layout() const { return static_cast<int>(spec().mig_layout.size()); }
  // Physical GPUs first, then MIG devices gpu-major: index gpus + gpu * layout + m.
  std::vector<Device>& devices() { return devices_; }
  Device& physical(int gpu) { return devices_[gpu]; }
  Device& mig(int gpu, int m) { return devices_[gpu_count() + gpu * mig_layout() + m]; }
  // Whether the node's model has GPM (sim::GpmCapable).
  bool gpm_capable() const { return gpm_capable_; }
  // A unit's GPM counters as the hardware would have them at wall time `wall_us - step`:
  // linear between the intervals' ends, so that two samples give smooth means. The lag of one
  // step keeps the time asked for inside what was simulated (the interval in progress is not
  // known until it ends). A GPU in MIG mode sums its instances, scaled by slices / total.
  GpmCounters GpmCountersAt(const Device& d, Micros wall_us) const;

  static constexpr Micros kKeepUs = 30 * kMicrosPerSecond;  // samples kept per device

 private:
  Node(Config config, sim::NodeStepper stepper);
  void Fold(const NodeSnapshot& s);
  Micros WallOf(Micros sim_us) const;

  Config config_;
  std::optional<sim::NodeStepper> stepper_;
  std::vector<Device> devices_;  // physical GPUs, then MIG devices gpu-major
  std::map<GpuUuid, int> by_uuid_;
  bool gpm_capable_ = false;
};

}  // namespace gpuledger::nvml_standin
