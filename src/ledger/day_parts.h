#pragma once
// How the read service cuts a window into days, and which of them it may hold: the small rules
// its reads share (read_service.cc, read_service_summaries.cc).

#include <vector>

#include "common/time_range.h"
#include "ledger/snapshot.h"

namespace gpuledger::ledger {

// Whether `snapshot` holds every row of `window` a ledger of `extent` can have.
bool Covers(const Snapshot& snapshot, const TimeRange& extent, const TimeRange& window);

// The last `days` days of a ledger of `extent`.
TimeRange KeptDays(const TimeRange& extent, int days);

bool Overlaps(const TimeRange& a, const TimeRange& b);

// Reads of days that meet a write each time before the read service gives up or reads whole.
inline constexpr int kRefreshTries = 3;

// A window's day (or the part of one it holds), and whether what is read of it may be held: it
// is all the ledger holds of its day (a first day starts at the ledger's first hour), it ended
// before the open hours, and it is within the last `held_days` days.
struct DayPart {
  TimeRange range;
  bool holds = false;
};
std::vector<DayPart> DayParts(const TimeRange& window, const TimeRange& extent, int held_days);

}  // namespace gpuledger::ledger
