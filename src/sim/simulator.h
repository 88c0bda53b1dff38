#pragma once
// The simulator: a scenario (docs/scenarios.md) drives NodeSnapshots exactly like the agent
// would build them from NVML, plus the ground truth per container.
//
// Event-driven: intervals are cut at every workload start/end, at every UTC hour boundary and on
// the --step grid, so allocation integrals are exact to the microsecond whatever the step. Usage
// is sampled at the step, with NVML's imperfections as a real H200 showed them in the
// observations (sample periods of 200 ms on an H200, between 1/6 s and 1 s elsewhere; each
// sample window's value given whole to the one process holding the GPU as it closes; whole-percent
// rounding; no per-process utilization on MIG nor for MPS clients); the truth has none of them.
// SM, tensor and DRAM activity (DeviceSignals::activity) is observed per unit where GPM
// (GpmCapable models) or DCGM (`dcgm: true`) would give it, with a small dither drawn from a
// random stream of its own, so adding it shifted no other observation.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/units.h"
#include "model/consumer.h"
#include "model/snapshot.h"
#include "sim/scenario.h"

namespace gpuledger::sim {

// What really happened to one container over the whole run.
struct Truth {
  // Exact allocation integral, in ppd x µs (divide by kWholeGpu for GPU-µs); __int128 because
  // a week of a whole GPU is 4.4e20 ppd-µs.
  __int128 allocated_ppd_us = 0;
  double compute_gpu_us = 0;  // physical-GPU µs its kernels really used
  double memory_byte_us = 0;
  // What that busy time did inside the GPU (model/activity.h), in physical-GPU µs like compute:
  // compute x the workload's EfficiencyProfile, whether or not the model has counters for it.
  double sm_active_gpu_us = 0;
  double sm_occupancy_gpu_us = 0;
  double tensor_active_gpu_us = 0;
  double dram_active_gpu_us = 0;
  GpuMicros AllocatedUs() const;  // rounded half up
  Truth& operator+=(const Truth& o);
};

// The truth as `demo --truth` and `gpuledger-sim-node --truth` write it: a header
// "key,allocated_gpu_us,compute_gpu_us,memory_byte_us" (with_activity: then
// ",sm_active_gpu_us,sm_occupancy_gpu_us,tensor_active_gpu_us,dram_active_gpu_us"), then a row
// per consumer (ConsumerRef::Key order: ConsumerRef's), allocation rounded half up, the others to
// the nearest integer. Columns are only ever added at the end; `demo --truth` writes the activity
// columns, `gpuledger-sim-node --truth` not yet (its readers check the four-column header).
std::string TruthCsv(const std::map<ConsumerRef, Truth>& truth, bool with_activity = false);

class Simulator {
 public:
  // Precondition: scenario was validated by ParseScenario. step_us > 0.
  Simulator(Scenario scenario, Micros step_us);
  // Movable, not copyable: the precomputed state points into scenario_.
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;
  Simulator(Simulator&&) = default;
  Simulator& operator=(Simulator&&) = default;

  // Calls `sink` once per node per interval, in time order of the interval ends (every
  // snapshot ending at t is delivered before any ending later). Intervals never cross an hour
  // boundary nor a step-grid point; a node's intervals are also cut where its own pods start or
  // end (not at other nodes' events, which keeps a large import fast). Run may be called again:
  // it resets truth() and replays the same output.
  void Run(const std::function<void(const NodeSnapshot&)>& sink);

  const Scenario& scenario() const { return scenario_; }
  // Every container (and host consumer) that ran, with owner and labels.
  const std::map<ConsumerRef, ConsumerInfo>& consumers() const { return consumers_; }
  // Valid after Run.
  const std::map<ConsumerRef, Truth>& truth() const { return truth_; }

 private:
  struct Impl;  // precomputed devices, pods and cut times (simulator.cc)

  Scenario scenario_;
  Micros step_us_;
  std::map<ConsumerRef, ConsumerInfo> consumers_;
  std::map<ConsumerRef, Truth> truth_;
  std::shared_ptr<Impl> impl_;
};

// Simulates one node of a scenario incrementally, for consumers that follow a clock (the NVML
// stand-in, `gpuledger-sim-node`): the snapshots equal, field for field, those Simulator::Run
// delivers for that node with the same scenario and step (same cuts, pids, uuids and, since the
// random stream is per node, the same samples). Not thread-safe; movable.
class NodeStepper {
 public:
  // kNotFound when the scenario has no node `node`. Precondition: step_us > 0 and the scenario
  // was validated by ParseScenario.
  static Result<NodeStepper> Create(Scenario scenario, const std::string& node, Micros step_us);

  // The snapshots of the intervals ending in (position_us(), sim_time_us], in time order, and
  // moves position_us() to the last end. Nothing once the scenario's end is reached; nothing
  // for a time at or before position_us().
  std::vector<NodeSnapshot> AdvanceTo(Micros sim_time_us);
  // End of the last interval delivered; the scenario start before the first.
  Micros position_us() const;
  // End of the next interval (AdvanceTo it delivers exactly that one); the scenario's end once
  // done.
  Micros next_end_us() const;
  bool done() const;  // the scenario's end was reached
  // What really happened to each consumer of this node over the intervals delivered so far
  // (every consumer placed on the node, zero before it starts).
  std::map<ConsumerRef, Truth> truth() const;

  const Scenario& scenario() const;
  const NodeSpec& node() const;
  // The node's devices (identical in every snapshot), available before any AdvanceTo.
  const std::vector<PhysicalGpu>& gpus() const;
  const std::vector<MigInstance>& mig_instances() const;

 private:
  struct Impl;
  explicit NodeStepper(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

// What is on one node at one instant: the agent-facing world (procfs, PodResources, CRI) that
// `gpuledger-sim-node` lays out. Pids, device uuids, grants and consumers are those of the snapshot
// whose interval holds the instant.
struct NodeState {
  std::string node;
  Micros at_us = 0;
  std::vector<PhysicalGpu> gpus;
  std::vector<MigInstance> mig_instances;
  // Grants of the pods running at at_us (a pod runs over [start, end)).
  std::vector<Grant> grants;
  // GPU processes of the pods and host processes running at at_us: pid, device (GPU or MIG
  // uuid), consumer or host_name, visible_devices, and memory at that instant (per process;
  // equal to the snapshot's for constant memory). sm_busy_us is unset.
  std::vector<ProcessObservation> processes;
  // The pods running at at_us, including those without a grant or without processes; no host
  // consumers.
  std::vector<ConsumerInfo> pods;
};

// kNotFound when the scenario has no node `node`. Any time is accepted; outside the scenario
// nothing runs.
Result<NodeState> StateAt(const Scenario& scenario, const std::string& node, Micros sim_time_us);

// The container runtime id of a consumer: 64 lower-case hex digits, a pure function of the
// ConsumerRef (namespace, pod, pod uid, container), so the CRI stand-in, the procfs cgroup paths
// and tests agree without sharing state. Digits 16i..16i+15 are the 64-bit
// HashOf(i, "container", namespace, pod, pod_uid, container) of sim_util.h, for i = 0..3.
std::string ContainerIdFor(const ConsumerRef& ref);

}  // namespace gpuledger::sim
