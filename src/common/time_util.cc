#include "common/time_util.h"

#include <fmt/format.h>
#include <cctype>
#include <charconv>
#include <cmath>
#include <ctime>
#include <optional>

#include "common/rounding.h"

namespace gpuledger {

std::int64_t DaysFromCivil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

CivilDate CivilFromDays(std::int64_t days) {
  days += 719468;
  const std::int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const auto doe = static_cast<unsigned>(days - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return {static_cast<std::int64_t>(yoe) + era * 400 + (m <= 2 ? 1 : 0), m, d};
}

namespace {

bool ReadInt(std::string_view s, std::size_t pos, std::size_t len, int& out) {
  if (pos + len > s.size()) return false;
  for (std::size_t i = pos; i < pos + len; ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  std::from_chars(s.data() + pos, s.data() + pos + len, out);
  return true;
}

// Splits "12.5GiB" into 12.5 and "GiB".
bool SplitNumber(std::string_view text, double& number, std::string_view& unit) {
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  if (i == 0) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + i, number);
  if (ec != std::errc() || ptr != text.data() + i) return false;
  unit = text.substr(i);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  return true;
}

}  // namespace

int DaysInMonth(std::int64_t year, unsigned month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : kDays[(month - 1) % 12];
}

Result<Micros> ParseRfc3339(std::string_view s) {
  int y, mo, d, h = 0, mi = 0, sec = 0;
  auto bad = [&] {
    return InvalidArgument(fmt::format("'{}' is not an RFC 3339 time (2026-11-23T00:00:00Z)", s));
  };
  if (!ReadInt(s, 0, 4, y) || s.size() < 10 || s[4] != '-' || !ReadInt(s, 5, 2, mo) ||
      s[7] != '-' || !ReadInt(s, 8, 2, d))
    return bad();
  std::size_t pos = 10;
  Micros frac_us = 0;
  std::int64_t offset_s = 0;
  if (pos < s.size()) {
    if ((s[pos] != 'T' && s[pos] != 't' && s[pos] != ' ') || !ReadInt(s, pos + 1, 2, h) ||
        s.size() < pos + 9 || s[pos + 3] != ':' || !ReadInt(s, pos + 4, 2, mi) ||
        s[pos + 6] != ':' || !ReadInt(s, pos + 7, 2, sec))
      return bad();
    pos += 9;
    if (pos < s.size() && s[pos] == '.') {
      Micros scale = 100000;
      for (++pos; pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos])); ++pos) {
        frac_us += (s[pos] - '0') * scale;
        scale /= 10;
      }
    }
    if (pos >= s.size()) return bad();
    if (s[pos] == 'Z' || s[pos] == 'z') {
      ++pos;
    } else if (s[pos] == '+' || s[pos] == '-') {
      int oh, om;
      if (!ReadInt(s, pos + 1, 2, oh) || s.size() < pos + 6 || s[pos + 3] != ':' ||
          !ReadInt(s, pos + 4, 2, om))
        return bad();
      if (oh > 23 || om > 59) return bad();
      offset_s = (s[pos] == '-' ? -1 : 1) * (oh * 3600 + om * 60);
      pos += 6;
    } else {
      return bad();
    }
    if (pos != s.size()) return bad();
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return bad();
  // A day past the month's end is refused, not carried into the next month (2026-11-31 is no
  // date; counted from the 1st it would read as 1 December).
  const int month_days = DaysInMonth(y, static_cast<unsigned>(mo));
  if (d > month_days)
    return InvalidArgument(
        fmt::format("'{}' is not a date: {:04}-{:02} has {} days", s, y, mo, month_days));
  std::int64_t seconds = DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset_s;
  const Micros t = seconds * kMicrosPerSecond + frac_us;  // |years| <= 9999: no wrap
  if (t < 0 || t >= kMaxInstantUs)
    return InvalidArgument(fmt::format("'{}' is outside 1970-01-01 .. 9999-12-31", s));
  return t;
}

Result<Micros> ParseInstant(std::string_view text) {
  std::int64_t seconds = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec == std::errc::result_out_of_range ||
      (ec == std::errc() && p == text.data() + text.size())) {
    if (ec != std::errc() || seconds < 0 || seconds >= kMaxInstantUs / kMicrosPerSecond)
      return InvalidArgument(
          fmt::format("'{}' is outside 1970-01-01 .. 9999-12-31 in unix seconds", text));
    return seconds * kMicrosPerSecond;
  }
  return ParseRfc3339(text);
}

Result<Micros> InstantFromUnixMillis(std::int64_t ms) {
  if (ms < 0 || ms >= kMaxInstantUs / 1000)
    return InvalidArgument(fmt::format("{} ms is outside 1970-01-01 .. 9999-12-31", ms));
  return ms * 1000;
}

std::string FormatRfc3339(Micros t) {
  std::time_t seconds = static_cast<std::time_t>(t / kMicrosPerSecond);
  if (t < 0 && t % kMicrosPerSecond != 0) --seconds;
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

Result<Micros> ParseDuration(std::string_view text) {
  auto bad = [&] {
    return InvalidArgument(
        fmt::format("'{}' is not a duration (e.g. 90s, 15m, 168h, 7d, 1h30m)", text));
  };
  if (text.empty()) return bad();
  Micros total = 0;
  std::string_view rest = text;
  while (!rest.empty()) {
    double number;
    std::string_view unit;
    if (!SplitNumber(rest, number, unit)) return bad();
    std::size_t unit_len = 0;
    while (unit_len < unit.size() && std::isalpha(static_cast<unsigned char>(unit[unit_len])))
      ++unit_len;
    std::string_view u = unit.substr(0, unit_len);
    double scale;
    if (u.empty() || u == "s")
      scale = 1e6;
    else if (u == "us")
      scale = 1;
    else if (u == "ms")
      scale = 1e3;
    else if (u == "m")
      scale = 60e6;
    else if (u == "h")
      scale = 3600e6;
    else if (u == "d")
      scale = 86400e6;
    else
      return bad();
    // Bounded before it becomes an integer: llround of a huge double is undefined.
    const double part = number * scale;
    if (!std::isfinite(part) || std::fabs(part) > static_cast<double>(kMaxInstantUs) ||
        std::llabs(total) > kMaxInstantUs) {
      return InvalidArgument(
          fmt::format("'{}': longer than the 8,000 years gpuledger takes", text));
    }
    total += static_cast<Micros>(std::llround(part));
    rest = unit.substr(unit_len);
    if (u.empty() && !rest.empty()) return bad();
  }
  if (std::llabs(total) > kMaxInstantUs)
    return InvalidArgument(fmt::format("'{}': longer than the 8,000 years gpuledger takes", text));
  return total;
}

Result<Bytes> ParseBytes(std::string_view text) {
  double number;
  std::string_view unit;
  if (!SplitNumber(text, number, unit))
    return InvalidArgument(fmt::format("'{}' is not a size (e.g. 20GiB, 512MiB, 3.5GB)", text));
  double scale;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "KB" || unit == "kB")
    scale = 1e3;
  else if (unit == "MB")
    scale = 1e6;
  else if (unit == "GB")
    scale = 1e9;
  else if (unit == "TB")
    scale = 1e12;
  else if (unit == "KiB")
    scale = 1024.0;
  else if (unit == "MiB")
    scale = 1024.0 * 1024;
  else if (unit == "GiB")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "TiB")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else
    return InvalidArgument(fmt::format(
        "'{}' has an unknown size unit '{}' (B, KB, MB, GB, KiB, MiB, GiB)", text, unit));
  const std::optional<std::int64_t> bytes = RoundToInt64(number * scale);
  if (!bytes) return InvalidArgument(fmt::format("'{}' is beyond the sizes gpuledger takes", text));
  return *bytes;
}

}  // namespace gpuledger
