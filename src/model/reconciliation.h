#pragma once
// A bill reconciliation (design section 4): the billed amount of one node on one UTC day, as
// imported from an invoice (FOCUS CSV), against what the model priced that node-day at. Reports
// and exports scale the node-day's device-hour prices so they sum to `billed_nanos` exactly.

#include <string>

#include "common/units.h"

namespace gpuledger {

inline constexpr Micros kMicrosPerDay = 24 * kMicrosPerHour;

// The start of the UTC day holding t.
constexpr Micros DayStart(Micros t) {
  Micros r = t % kMicrosPerDay;
  return r < 0 ? t - r - kMicrosPerDay : t - r;
}

struct Reconciliation {
  std::string node;
  Micros day_us = 0;         // start of the UTC day
  Nanos modelled_nanos = 0;  // Σ device-hour prices of the node-day when the bill was imported
  Nanos billed_nanos = 0;    // Σ BilledCost of the bill rows matched to the node-day
  std::string factor;        // billed / modelled as a reduced ratio "9/10" ("1/0" when modelled 0)
  std::int64_t factor_ppm = 0;  // the same, in parts per million, rounded half up (display only)
  std::string currency;         // the bill's BillingCurrency ("" when the bill had no such column)
  std::string bill_file;
  Micros imported_at_us = 0;
  bool operator==(const Reconciliation&) const = default;
};

}  // namespace gpuledger
