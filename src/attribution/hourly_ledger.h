#pragma once
// Rolls interval attributions into exact hourly ledger rows (design section 7).
//
// Allocation is carried as share x time (ppd-µs) and turned into GPU-µs once per device-hour
// by exact apportionment of the metered time, so allocated figures are exact to the
// microsecond per row whatever the collection interval, and Σ allocated + unallocated ==
// metered exactly. Compute, memory and energy are summed as they come (already integers that
// conserve per interval). Not thread-safe; one owner.

#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "model/ledger.h"
#include "model/usage.h"

namespace gpuledger::attribution {

// Where a node's devices sit, for the DeviceHour rows.
struct NodeContext {
  std::string cluster;
  std::string node;
  std::string pricing_class;
};

class HourlyLedger {
 public:
  // `describe` gives owner and labels for a consumer (may return just the ref).
  explicit HourlyLedger(std::function<ConsumerInfo(const ConsumerRef&)> describe);

  // Adds one interval's attribution. Precondition: no DeviceUsage crosses an hour boundary.
  void Add(const NodeContext& node, const std::vector<DeviceUsage>& usage);

  // Removes and returns every device-hour that starts before `before_us` (hour-aligned) —
  // closed hours — in (hour, gpu) order. Prices are left 0: pricing is cost's job.
  std::vector<LedgerHour> TakeHoursBefore(Micros before_us);
  std::vector<LedgerHour> TakeAll() { return TakeHoursBefore(INT64_MAX); }

 private:
  struct ConsumerAcc {
    UsageRow row;
    unsigned __int128 allocated_ppd_us = 0;
  };
  struct DeviceAcc {
    DeviceHour device;
    unsigned __int128 unallocated_ppd_us = 0;
    std::map<ConsumerRef, ConsumerAcc> consumers;
  };
  using Key = std::tuple<Micros, std::string>;  // (hour, gpu uuid)

  LedgerHour Close(DeviceAcc& acc) const;

  std::function<ConsumerInfo(const ConsumerRef&)> describe_;
  std::map<Key, DeviceAcc> open_;
};

}  // namespace gpuledger::attribution
