#pragma once
// Report windows as users write them, resolved against what a ledger holds.

#include <string_view>

#include "common/result.h"
#include "common/time_range.h"
#include "common/units.h"

namespace gpuledger::report {

// "all"; a duration ("7d", "24h": that much up to the end of what the ledger holds — a live
// ledger ends now, a replayed one at its last hour, so the same words work on both);
// "START,END" in RFC 3339 or in unix seconds; OpenCost's calendar words, in UTC, about the day,
// week or month holding the ledger's last instant: "today" and "week" and "month" (from the
// start of that day, week or month to the end), "yesterday", "lastweek" and "lastmonth" (the
// whole one before). Weeks start on Sunday, as OpenCost's do. Relative windows are widened to
// whole hours. `extent` is what the ledger holds.
Result<TimeRange> ResolveWindow(std::string_view window, const TimeRange& extent);

}  // namespace gpuledger::report
