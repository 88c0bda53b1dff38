#pragma once
// What a reader holds per day (held days, held GPU days) sits in a std::map keyed by the day's
// start; a write drops the days it touched, and days before a reader's range go. One rule for
// both, here.

#include <map>

#include "common/time_range.h"
#include "common/units.h"

namespace gpuledger::ledger {

// Erases the days [d, d + 1 day) that overlap `touched` (start before its end, end after its
// start); true when any was held.
template <typename Day>
bool EraseDaysTouched(std::map<Micros, Day>& days, const TimeRange& touched) {
  auto first = days.upper_bound(touched.from_us - kMicrosPerDay);
  auto last = days.lower_bound(touched.to_us);
  const bool any = first != last;
  days.erase(first, last);
  return any;
}

// Erases the days that start before `from_us`; true when any was held.
template <typename Day>
bool EraseDaysBefore(std::map<Micros, Day>& days, Micros from_us) {
  auto last = days.lower_bound(from_us);
  const bool any = last != days.begin();
  days.erase(days.begin(), last);
  return any;
}

}  // namespace gpuledger::ledger
