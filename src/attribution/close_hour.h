#pragma once
// The one closing step of a device-hour (design section 2): what the exact-delta engine
// (ingest::CounterLedger) accumulated for one (hour, physical GPU), in integers, out as a
// LedgerHour that conserves exactly:
//   metered + unmetered == 1 h            busy + idle == metered
//   Σ compute + unattributed == busy      Σ allocated + unallocated == metered
//   Σ consumer energy + unattributed energy + idle energy == energy
// Accumulators that already conserve come out unchanged. Where they do not (an interval split
// across an hour boundary rounds each counter on its own; a grant counted over more than the
// metered time), each identity is restored by exact apportionment of its total, so no figure
// moves by more than its share of the difference. Pure; no I/O.

#include <vector>

#include "model/ledger.h"

namespace gpuledger::attribution {

struct OpenDeviceHour {
  // Identity and accumulated figures; unmetered, unallocated, idle_energy and
  // unattributed_energy are derived here (their inputs are ignored).
  DeviceHour device;
  // Per consumer: identity, allocated_us (granted GPU-µs, any excess scaled down), compute_us,
  // memory_kib_s, energy_mj, peak memory and qualities; activity, its quality and rule and the
  // share source pass through unchanged (negative activity clamps to 0).
  std::vector<UsageRow> usage;
};

LedgerHour CloseDeviceHour(OpenDeviceHour open);

}  // namespace gpuledger::attribution
