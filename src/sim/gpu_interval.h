#pragma once
// One physical GPU of a simulated node over one interval, as SimulateInterval (simulator.cc)
// runs it a GPU at a time: each context's demand and contention, NVML's sample windows and who
// owns them, the processes and memory NVML lists, the signals the agent reads, and the truth
// they come from. Internal to the simulator.

#include <random>
#include <vector>

#include "model/snapshot.h"
#include "sim/sample_windows.h"
#include "sim/simulator.h"
#include "sim/world.h"

namespace gpuledger::sim {

// Σ fraction x µs of one unit (a physical GPU or a MIG instance) over an interval, relative to
// the unit, as the counters integrate it.
struct UnitActivity {
  double graphics = 0;  // any context busy (GPM GRAPHICS_UTIL, DCGM GR_ENGINE_ACTIVE)
  double sm_active = 0, sm_occupancy = 0, tensor_active = 0, dram_active = 0;
};

// Reusable buffers of SimulateInterval.
struct Scratch {
  std::vector<int> active;
  std::vector<SampleEntry> entries;
  std::vector<double> owner_weights;        // GiveWindowsToOwners
  std::vector<UnitActivity> unit_activity;  // per MIG instance of a GPU, then the GPU itself
};

// One physical GPU of a node over an interval [a, b): what the steps of simulating it share.
struct GpuInterval {
  world::NodeWorld& ns;
  std::vector<world::Actor>& actors;
  const NodeSpec& spec;
  int g;
  Micros a, b, dt;
  int layout;  // MIG instances per GPU
  bool mig, mps;
  Truth* const* truth_of;
  Scratch& scratch;

  UnitActivity& phys_activity() const {
    return scratch.unit_activity[static_cast<std::size_t>(layout)];
  }
  double UnitOf(const SampleEntry& e) const {  // the entry's unit, as a fraction of the GPU
    return e.mig >= 0 ? static_cast<double>(ns.mig_slices[e.mig]) / spec.total_slices : 1.0;
  }
};

// Simulates the GPU of `gi` over its interval into `snap` and the actors' truth: usage draws
// from `rng`, then the signals' dither from `activity_rng`. That order is the scenario's
// identity: every observation of a seed depends on it. scratch.active holds the node's active
// actors.
void SimulateGpu(const GpuInterval& gi, std::mt19937_64& rng, std::mt19937_64& activity_rng,
                 NodeSnapshot& snap);

}  // namespace gpuledger::sim
