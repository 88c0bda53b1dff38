#pragma once
// One span of time for every layer: a report window, a ledger read, whole days around a
// reconciliation, a charge period.

#include <cstdint>

#include "common/units.h"

namespace gpuledger {

// [from_us, to_us), µs since the epoch. The default is all of time.
struct TimeRange {
  Micros from_us = 0;        // inclusive
  Micros to_us = INT64_MAX;  // exclusive

  bool Contains(Micros t) const { return from_us <= t && t < to_us; }
  friend bool operator==(const TimeRange&, const TimeRange&) = default;
};

}  // namespace gpuledger
