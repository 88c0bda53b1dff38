#pragma once
// The snapshot's figures in their narrow forms (packed_column.h): a usage row's in 36 bytes
// (was 64).

#include <cstdint>

#include "cost/policy.h"
#include "ledger/packed_column.h"
#include "model/activity.h"

namespace gpuledger::ledger {

// What a usage row measured: how its device-hour's price is split, and how active it was.
struct UsageFigures {
  cost::ConsumerWeights weights;
  Activity activity;
};

// UsageFigures in 36 bytes: an hour's GPU-µs and millijoules in 32 bits, KiB-s in 48.
struct PackedUsage {
  using Whole = UsageFigures;
  std::uint32_t allocated_us;
  std::uint32_t compute_us;
  std::uint32_t energy_mj;
  std::uint32_t memory_low;
  std::uint32_t sm_active_us;
  std::uint32_t sm_occupancy_us;
  std::uint32_t tensor_active_us;
  std::uint32_t dram_active_us;
  std::uint16_t memory_high;
  std::uint16_t set_aside;

  bool Pack(const UsageFigures& f) {
    const cost::ConsumerWeights& w = f.weights;
    const Activity& a = f.activity;
    return Narrow(w.allocated_us, allocated_us) && Narrow(w.compute_us, compute_us) &&
           Narrow(w.energy_mj, energy_mj) && Narrow(w.memory_kib_s, memory_low, memory_high) &&
           Narrow(a.sm_active_us, sm_active_us) && Narrow(a.sm_occupancy_us, sm_occupancy_us) &&
           Narrow(a.tensor_active_us, tensor_active_us) && Narrow(a.dram_active_us, dram_active_us);
  }
  UsageFigures Unpack() const {
    return {{allocated_us, compute_us, Widen(memory_low, memory_high), energy_mj},
            {sm_active_us, sm_occupancy_us, tensor_active_us, dram_active_us}};
  }
  void MarkAside() { set_aside = 1; }
  bool aside() const { return set_aside != 0; }
};
static_assert(sizeof(PackedUsage) == 36);

}  // namespace gpuledger::ledger
