#pragma once
// Bill reconciliation applied to device-hour prices (design section 4). Pure: rows in, rows out.
//
// For every node-day with a Reconciliation, the prices of that node-day's device-hours are
// replaced by shares of the billed amount, apportioned by their modelled prices with the
// largest-remainder method, so they sum to `billed_nanos` exactly. Every consumer split
// downstream (cost::SplitDeviceHour) then conserves the bill too.

#include <span>
#include <vector>

#include "common/time_range.h"
#include "common/units.h"
#include "model/ledger.h"
#include "model/reconciliation.h"

namespace gpuledger::billing {

// [from_us, to_us) widened to whole UTC days. A reconciliation scales a whole node-day, so
// callers read device-hours over the widened range, apply, then keep their own window.
TimeRange WholeDays(Micros from_us, Micros to_us);

// The shares of `billed_nanos` for device-hours priced `modelled` (exact, Σ == billed_nanos).
// Weights are the modelled prices; when they are all zero, the metered times; when those are
// all zero too, equal.
std::vector<Nanos> ScaleToBill(Nanos billed_nanos, std::span<const DeviceHour> node_day);

// `devices` with every reconciled node-day's prices scaled to its bill. Device-hours of a
// node-day outside `devices` are unknown here: pass whole days (see WholeDays). Order is kept.
std::vector<DeviceHour> ApplyReconciliations(std::span<const DeviceHour> devices,
                                             std::span<const Reconciliation> reconciliations);

}  // namespace gpuledger::billing
