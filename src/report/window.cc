#include "report/window.h"

#include <fmt/format.h>

#include "common/time_util.h"

namespace gpuledger::report {

Result<TimeRange> ResolveWindow(std::string_view window, const TimeRange& extent) {
  if (window == "all" || window.empty()) return extent;
  if (auto comma = window.find(','); comma != std::string_view::npos) {
    auto from = ParseInstant(window.substr(0, comma));
    auto to = ParseInstant(window.substr(comma + 1));
    if (!from) return InvalidArgument("window start: " + from.error().message);
    if (!to) return InvalidArgument("window end: " + to.error().message);
    if (*to <= *from)
      return InvalidArgument(fmt::format("window '{}': end must be after start", window));
    return TimeRange{*from, *to};
  }
  // A bare number would be seconds (ParseDuration's default), never what `--window 7` meant.
  if (window.find_first_not_of("0123456789.") == std::string_view::npos)
    return InvalidArgument(
        fmt::format("window '{}': give a unit (7d, 24h, 90m) or START,END", window));
  auto length = ParseDuration(window);
  if (!length || *length <= 0)
    return InvalidArgument(fmt::format(
        "window '{}': expected all, a duration such as 7d or 24h, or START,END (RFC 3339 or "
        "unix seconds)",
        window));
  return TimeRange{HourStart(extent.to_us - *length), extent.to_us};
}

}  // namespace gpuledger::report
