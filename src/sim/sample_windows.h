#pragma once
// How the simulated NVML gives out its samples (simulator.h): a device's sampled utilization
// observed as NVML rounds and dithers it, and its per-process samples on a time-sliced GPU
// given to the processes as a real H200 gave them.

#include <cstdint>
#include <random>
#include <vector>

#include "common/units.h"
#include "sim/world.h"

namespace gpuledger::sim {

// One sub-window observation of an activity level u in [0, 1]: whole-percent rounding of 100 u
// plus zero-mean dither, as NVML's sampled utilization behaves.
int ObservePercent(double u, std::mt19937_64& rng);

// One consumer context on a GPU in a sub-window, and what its processes were sampled at.
struct SampleEntry {
  int actor;
  int ctx;       // index into the actor's contexts
  int mig;       // -1: physical GPU
  double u = 0;  // this sub-window's demand
  double scale = 1;
  std::vector<std::int64_t> sm_acc;  // per process: Σ percent x µs of the sample windows it owns
};

// NVML's per-process samples on a time-sliced GPU, as a real H200 gave them (docs/attribution.md,
// "What NVML can and cannot tell"), and the agent's split of them: each of the device's sample
// windows goes whole to one process, carrying the device's value for the window, and that
// process is the one holding the GPU when the window closes (the last one to run when nobody
// runs then). The agent shares a window between the processes sampled within 100 ms of it (its
// owner and the previous window's, sources/nvml/presence_split.h) by their values. A sub-window
// of one sample period draws its owner from the demand at that instant, so a periodic load
// aliases against the windows as run 2's did; a longer sub-window (long steps) draws the owners
// of its windows from its mean demand and gives each its windows. `percent` is the device's
// observed value for the sub-window [sa, sb); `last` the previous window's owner; `weight` a
// reusable buffer.
void GiveWindowsToOwners(std::vector<SampleEntry>& entries, const std::vector<world::Actor>& actors,
                         Micros sa, Micros sb, double period_us, int percent,
                         world::WindowOwner& last, std::vector<double>& weight,
                         std::mt19937_64& rng);

}  // namespace gpuledger::sim
