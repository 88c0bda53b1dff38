#pragma once
// A workload's demand as the scenario describes it (docs/scenarios.md), integrated exactly over
// any window: compute (fraction of a GPU x µs) and memory (bytes x µs), without replaying the
// past, so any node can be simulated alone and any window split anywhere.

#include <cstdint>

#include "common/units.h"
#include "sim/scenario.h"

namespace gpuledger::sim {

// ∫ of the profile's demand (fraction x µs) over [t0, t1), times relative to the actor's start.
double ProfileIntegral(const ComputeProfile& c, std::uint64_t seed, Micros t0, Micros t1);

// ∫ memory (bytes x µs) over [t0, t1), relative to the actor's start.
double MemoryIntegral(const MemoryProfile& m, Micros t0, Micros t1);

// Memory held at `t` (relative to the actor's start): the sawtooth's value, not an average.
double MemoryAt(const MemoryProfile& m, Micros t);

}  // namespace gpuledger::sim
