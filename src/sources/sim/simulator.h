#pragma once
// The simulator: a scenario (docs/scenarios.md) drives NodeSnapshots exactly like the agent
// would build them from NVML, plus the ground truth per container.
//
// Event-driven: intervals are cut at every workload start/end, at every UTC hour boundary and on
// the --step grid, so allocation integrals are exact to the microsecond whatever the step. Usage
// is sampled at the step, with NVML's known imperfections in the observations (per-process
// samples only for processes busy in the last sample period, sample periods between 1/6 s and
// 1 s, whole-percent rounding, per-process sums that can exceed the device's utilization, no
// per-process utilization on MIG nor for MPS clients); the truth has none of them.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/units.h"
#include "model/consumer.h"
#include "model/snapshot.h"
#include "sources/sim/scenario.h"

namespace gpuledger::sim {

// What really happened to one container over the whole run.
struct Truth {
  // Exact allocation integral, in ppd x µs (divide by kWholeGpu for GPU-µs); __int128 because
  // a week of a whole GPU is 4.4e20 ppd-µs.
  __int128 allocated_ppd_us = 0;
  double compute_gpu_us = 0;      // physical-GPU µs its kernels really used
  double memory_byte_us = 0;
  GpuMicros AllocatedUs() const;  // rounded half up
};

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

}  // namespace gpuledger::sim
