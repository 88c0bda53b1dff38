#pragma once
// Report windows as users write them, resolved against what a ledger holds.

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/time_range.h"
#include "common/units.h"

namespace gpuledger::report {

// "all" (from the start of the ledger's first UTC day); a duration ("24h", "90m": that much up to
// the end of what the ledger holds — a live ledger ends now, a replayed one at its last hour, so
// the same words work on both); whole days
// ("7d": as OpenCost reads them, the day holding the ledger's last instant and the 6 whole days
// before it, up to the end, so that a step of days steps over calendar days);
// "START,END" in RFC 3339 or in unix seconds; OpenCost's calendar words, in UTC, about the day,
// week or month holding the ledger's last instant: "today" and "week" and "month" (from the
// start of that day, week or month to the end), "yesterday", "lastweek" and "lastmonth" (the
// whole one before). Weeks start on Sunday, as OpenCost's do. Relative windows are widened to
// whole hours. "YYYY-MM" is that UTC month (a closed period's window). `extent` is what the
// ledger holds. On a ledger that holds nothing yet (an empty extent) a window counted from its
// end is kInvalidArgument ("the ledger is empty ..."): there is no end to count from, and a
// window of 1970 would mislead; "YYYY-MM" and "START,END" are what they say.
Result<TimeRange> ResolveWindow(std::string_view window, const TimeRange& extent);

// Where `window` reaches past what a ledger holds (`extent`, its first hour's start to its last
// hour's end), where nothing is recorded: "before", "after", "before and after", or "" when it
// does not (an empty ledger: ""; "all" starts at the first day's midnight, which is not past
// it). What every answer over a window says, so a zero there is not read as "nothing used".
std::string_view ReachPast(const TimeRange& window, const TimeRange& extent);

// "2026-11" -> [2026-11-01T00:00Z, 2026-12-01T00:00Z); nullopt for other text.
std::optional<TimeRange> MonthRange(std::string_view month);
// The "YYYY-MM" of a month's first instant (MonthRange's inverse), or "" for another instant.
std::string MonthOf(const TimeRange& range);

}  // namespace gpuledger::report
