#include "report/window.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "common/time_util.h"
#include "model/reconciliation.h"

namespace gpuledger::report {

namespace {

constexpr Micros kMicrosPerDay = 24 * kMicrosPerHour;

// OpenCost's window words, about the UTC day holding `last` (the ledger's last instant).
std::optional<TimeRange> CalendarWindow(std::string_view word, Micros end_us) {
  const std::int64_t day = (end_us - 1) / kMicrosPerDay;  // the day of the last instant
  const std::int64_t week = day - (day + 4) % 7;          // its Sunday (1970-01-01: Thursday)
  const CivilDate date = CivilFromDays(day);
  const std::int64_t month = DaysFromCivil(date.year, date.month, 1);
  const std::int64_t last_month = date.month == 1 ? DaysFromCivil(date.year - 1, 12, 1)
                                                  : DaysFromCivil(date.year, date.month - 1, 1);
  auto days = [](std::int64_t from, std::int64_t to) {
    return TimeRange{from * kMicrosPerDay, to * kMicrosPerDay};
  };
  if (word == "today") return TimeRange{day * kMicrosPerDay, end_us};
  if (word == "yesterday") return days(day - 1, day);
  if (word == "week") return TimeRange{week * kMicrosPerDay, end_us};
  if (word == "lastweek") return days(week - 7, week);
  if (word == "month") return TimeRange{month * kMicrosPerDay, end_us};
  if (word == "lastmonth") return days(last_month, month);
  return std::nullopt;
}

// N of a window written "Nd" (digits, then d): a number of calendar days.
std::optional<std::int64_t> WholeDays(std::string_view window) {
  if (window.size() < 2 || window.size() > 7 || window.back() != 'd') return std::nullopt;
  std::int64_t days = 0;
  for (char c : window.substr(0, window.size() - 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    days = days * 10 + (c - '0');
  }
  return days > 0 ? std::optional(days) : std::nullopt;
}

}  // namespace

std::optional<TimeRange> MonthRange(std::string_view month) {
  if (month.size() != 7 || month[4] != '-') return std::nullopt;
  for (std::size_t i : {0, 1, 2, 3, 5, 6})
    if (month[i] < '0' || month[i] > '9') return std::nullopt;
  const std::int64_t year = std::stoll(std::string(month.substr(0, 4)));
  const unsigned m = static_cast<unsigned>(std::stoi(std::string(month.substr(5, 2))));
  if (year < 1970 || m < 1 || m > 12) return std::nullopt;
  const std::int64_t first = DaysFromCivil(year, m, 1);
  const std::int64_t next = m == 12 ? DaysFromCivil(year + 1, 1, 1) : DaysFromCivil(year, m + 1, 1);
  return TimeRange{first * kMicrosPerDay, next * kMicrosPerDay};
}

std::string MonthOf(const TimeRange& range) {
  if (range.from_us < 0 || range.from_us % kMicrosPerDay != 0) return "";
  const CivilDate date = CivilFromDays(range.from_us / kMicrosPerDay);
  const std::string month = fmt::format("{:04}-{:02}", date.year, date.month);
  auto whole = MonthRange(month);
  return whole && *whole == range ? month : "";
}

Result<TimeRange> ResolveWindow(std::string_view window, const TimeRange& extent) {
  if (auto month = MonthRange(window)) return *month;
  // A window counted from the ledger's end, on a ledger that has none.
  const bool empty = extent.to_us <= extent.from_us;
  auto nothing_yet = [&] {
    return InvalidArgument(fmt::format(
        "window '{}': the ledger is empty: no hour is recorded yet to count back from (the "
        "first is written when an hour closes; START,END or a month YYYY-MM answer empty)",
        window.empty() ? "all" : window));
  };
  // From the start of the ledger's first day (nothing is before its first hour): steps of
  // days over it are calendar days, as they are over "30d".
  if (window == "all" || window.empty()) {
    if (empty) return nothing_yet();
    return TimeRange{std::min(extent.from_us, extent.from_us / kMicrosPerDay * kMicrosPerDay),
                     extent.to_us};
  }
  if (auto calendar = CalendarWindow(window, extent.to_us)) {
    if (empty) return nothing_yet();
    if (calendar->from_us < 0)
      return InvalidArgument(fmt::format("window '{}': before 1970", window));
    return *calendar;
  }
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
        "window '{}': expected all, a duration such as 7d or 24h, today, yesterday, week, "
        "lastweek, month, lastmonth, a month YYYY-MM, or START,END (RFC 3339 or unix seconds)",
        window));
  if (empty) return nothing_yet();
  TimeRange range{HourStart(extent.to_us - *length), extent.to_us};
  if (auto days = WholeDays(window)) {
    // OpenCost's reading of "the past N days": the day holding the ledger's last instant and
    // the N-1 whole days before it, so that steps of days are calendar days.
    const std::int64_t last_day = (extent.to_us - 1) / kMicrosPerDay;
    range.from_us = (last_day - *days + 1) * kMicrosPerDay;
  }
  // Held to the bounds of an explicit START: a ledger holds nothing before 1970, and no reader
  // meets a time before the epoch, where day arithmetic rounds the other way (issue 58).
  range.from_us = std::max<Micros>(range.from_us, 0);
  return range;
}

std::string_view ReachPast(const TimeRange& window, const TimeRange& extent) {
  if (extent.to_us <= extent.from_us) return "";
  const bool before = window.from_us < DayStart(extent.from_us);
  const bool after = window.to_us > extent.to_us;
  return before ? (after ? "before and after" : "before") : (after ? "after" : "");
}

}  // namespace gpuledger::report
