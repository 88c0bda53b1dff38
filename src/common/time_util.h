#pragma once
// Time and size text: RFC 3339 instants, durations ("90s", "15m", "168h", "7d", "1h30m") and
// sizes ("20GiB", "512MiB", "3.5GB"); civil dates.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/units.h"

namespace gpuledger {

// Every instant and duration gpuledger takes from a user, a file or the wire becomes µs in the
// parsers below, and only there: they refuse instants outside [1970-01-01, 10000-01-01) and
// durations longer than that span, so sums and differences of what they return never wrap.
inline constexpr Micros kMaxInstantUs = 253'402'300'800LL * kMicrosPerSecond;  // 10000-01-01

Result<Micros> ParseRfc3339(std::string_view text);  // "2026-11-23T00:00:00Z", offsets ok
// Unix seconds ("1764633600") or RFC 3339: the instants OpenCost's API windows use.
Result<Micros> ParseInstant(std::string_view text);
// Unix milliseconds (exposition timestamps, snapshot file names) to µs, refused outside
// 1970-01-01 .. 9999-12-31 like every other instant.
Result<Micros> InstantFromUnixMillis(std::int64_t ms);
std::string FormatRfc3339(Micros t);                  // always UTC, "Z", whole seconds
Result<Micros> ParseDuration(std::string_view text);  // units us ms s m h d; bare = seconds
Result<Bytes> ParseBytes(std::string_view text);      // B KB MB GB KiB MiB GiB TiB; bare = B

// Civil dates of the proleptic Gregorian calendar, as days since 1970-01-01 (UTC days; Howard
// Hinnant's algorithms, exact for every int64 day a Micros can name).
struct CivilDate {
  std::int64_t year = 1970;
  unsigned month = 1;  // 1..12
  unsigned day = 1;    // 1..31
  friend bool operator==(const CivilDate&, const CivilDate&) = default;
};
std::int64_t DaysFromCivil(std::int64_t year, unsigned month, unsigned day);
int DaysInMonth(std::int64_t year, unsigned month);  // month 1..12; leap years counted
CivilDate CivilFromDays(std::int64_t days);

}  // namespace gpuledger
