#pragma once
// The snapshot's figures in their narrow forms (packed_column.h): a usage row's in 36 bytes
// (was 64), a device-hour's in 76 (was 128).

#include <cstdint>

#include "cost/policy.h"
#include "ledger/packed_column.h"
#include "model/activity.h"
#include "model/ledger.h"

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

// A device-hour's numbers (DeviceHour without its strings); prices already reconciled.
struct DeviceFigures : DeviceHourAmounts {
  Micros hour_us = 0;
  std::uint32_t placement = 0;  // Snapshot::placements()
  PriceState price_state = PriceState::kPriced;
  // What the device's memory could have held less what its rows and the unattributed bucket
  // held, clamped to [0, INT64_MAX] (the report's idle memory-time).
  KibSeconds unused_memory_kib_s = 0;
};

// DeviceFigures in 76 bytes: the hour as a number of hours, GPU-µs and millijoules in 32 bits,
// bytes, KiB-s and nano-dollars in 48 (a device-hour's price up to $281,000).
struct PackedDevice {
  using Whole = DeviceFigures;
  std::uint32_t hour;  // hour_us / kMicrosPerHour
  std::uint32_t placement;
  std::uint32_t price_low;
  std::uint32_t energy_price_low;
  std::uint32_t metered_us;
  std::uint32_t unmetered_us;
  std::uint32_t unallocated_us;
  std::uint32_t busy_us;
  std::uint32_t idle_us;
  std::uint32_t unattributed_us;
  std::uint32_t memory_total_low;
  std::uint32_t unattributed_memory_low;
  std::uint32_t energy_mj;
  std::uint32_t idle_energy_mj;
  std::uint32_t unattributed_energy_mj;
  std::uint32_t unused_memory_low;
  std::uint16_t price_high;
  std::uint16_t energy_price_high;
  std::uint16_t memory_total_high;
  std::uint16_t unattributed_memory_high;
  std::uint16_t unused_memory_high;
  std::uint8_t price_state;
  std::uint8_t set_aside;

  bool Pack(const DeviceFigures& f) {
    if (f.hour_us % kMicrosPerHour != 0) return false;
    placement = f.placement;
    price_state = static_cast<std::uint8_t>(f.price_state);
    return Narrow(f.hour_us / kMicrosPerHour, hour) &&
           Narrow(f.price_nanos, price_low, price_high) &&
           Narrow(f.energy_price_nanos, energy_price_low, energy_price_high) &&
           Narrow(f.metered_us, metered_us) && Narrow(f.unmetered_us, unmetered_us) &&
           Narrow(f.unallocated_us, unallocated_us) && Narrow(f.busy_us, busy_us) &&
           Narrow(f.idle_us, idle_us) && Narrow(f.unattributed_us, unattributed_us) &&
           Narrow(f.memory_total_bytes, memory_total_low, memory_total_high) &&
           Narrow(f.unattributed_memory_kib_s, unattributed_memory_low, unattributed_memory_high) &&
           Narrow(f.energy_mj, energy_mj) && Narrow(f.idle_energy_mj, idle_energy_mj) &&
           Narrow(f.unattributed_energy_mj, unattributed_energy_mj) &&
           Narrow(f.unused_memory_kib_s, unused_memory_low, unused_memory_high);
  }
  DeviceFigures Unpack() const {
    DeviceFigures f;
    f.hour_us = static_cast<Micros>(hour) * kMicrosPerHour;
    f.placement = placement;
    f.price_state = static_cast<PriceState>(price_state);
    f.price_nanos = Widen(price_low, price_high);
    f.energy_price_nanos = Widen(energy_price_low, energy_price_high);
    f.metered_us = metered_us;
    f.unmetered_us = unmetered_us;
    f.unallocated_us = unallocated_us;
    f.busy_us = busy_us;
    f.idle_us = idle_us;
    f.unattributed_us = unattributed_us;
    f.memory_total_bytes = Widen(memory_total_low, memory_total_high);
    f.unattributed_memory_kib_s = Widen(unattributed_memory_low, unattributed_memory_high);
    f.energy_mj = energy_mj;
    f.idle_energy_mj = idle_energy_mj;
    f.unattributed_energy_mj = unattributed_energy_mj;
    f.unused_memory_kib_s = Widen(unused_memory_low, unused_memory_high);
    return f;
  }
  void MarkAside() { set_aside = 1; }
  bool aside() const { return set_aside != 0; }
};
static_assert(sizeof(PackedDevice) == 76);

}  // namespace gpuledger::ledger
