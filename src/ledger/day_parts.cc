#include "ledger/day_parts.h"

#include <algorithm>

#include "ledger/day_rollup.h"
#include "model/reconciliation.h"

namespace gpuledger::ledger {

bool Covers(const Snapshot& snapshot, const TimeRange& extent, const TimeRange& window) {
  const Micros from = std::max(window.from_us, extent.from_us);
  const Micros to = std::min(window.to_us, extent.to_us);
  return from >= to || (from >= snapshot.range().from_us && to <= snapshot.range().to_us);
}

TimeRange KeptDays(const TimeRange& extent, int days) {
  return {std::max(extent.from_us, extent.to_us - days * kMicrosPerDay), extent.to_us};
}

bool Overlaps(const TimeRange& a, const TimeRange& b) {
  return a.from_us < b.to_us && b.from_us < a.to_us;
}

std::vector<DayPart> DayParts(const TimeRange& window, const TimeRange& extent, int held_days) {
  std::vector<DayPart> parts;
  const Micros closed = DayStart(extent.to_us - kOpenHours * kMicrosPerHour);
  const Micros oldest = KeptDays(extent, held_days).from_us;
  const Micros to = std::min(window.to_us, extent.to_us);
  for (Micros t = std::max(window.from_us, extent.from_us); t < to;) {
    const Micros day = DayStart(t);
    const Micros end = std::min(day + kMicrosPerDay, to);
    parts.push_back({{t, end},
                     t == std::max(day, extent.from_us) && end == day + kMicrosPerDay &&
                         end <= closed && t >= oldest});
    t = end;
  }
  return parts;
}

}  // namespace gpuledger::ledger
