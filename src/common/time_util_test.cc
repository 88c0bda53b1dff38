#include "common/time_util.h"

#include <gtest/gtest.h>

namespace gpuledger {
namespace {

TEST(ParseRfc3339, ADayPastTheMonthsEndIsNoDate) {
  auto november = ParseRfc3339("2026-11-31T00:00:00Z");
  ASSERT_FALSE(november);
  EXPECT_EQ(november.error().message, "'2026-11-31T00:00:00Z' is not a date: 2026-11 has 30 days");
  EXPECT_FALSE(ParseRfc3339("2026-02-29T00:00:00Z"));
  EXPECT_TRUE(ParseRfc3339("2028-02-29T00:00:00Z"));   // a leap year
  EXPECT_FALSE(ParseRfc3339("2100-02-29T00:00:00Z"));  // a century that is not
  EXPECT_TRUE(ParseRfc3339("2000-02-29T00:00:00Z"));   // one that is
  EXPECT_TRUE(ParseRfc3339("2026-12-31"));
}

TEST(ParseRfc3339, UtcAndOffsets) {
  EXPECT_EQ(*ParseRfc3339("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(*ParseRfc3339("2026-11-23T00:00:00Z"), 1795392000LL * kMicrosPerSecond);
  EXPECT_EQ(*ParseRfc3339("2026-11-23T02:00:00+02:00"), *ParseRfc3339("2026-11-23T00:00:00Z"));
  EXPECT_EQ(*ParseRfc3339("1970-01-01T00:00:01.5Z"), 1'500'000);
  EXPECT_EQ(*ParseRfc3339("2026-11-23"), *ParseRfc3339("2026-11-23T00:00:00Z"));
  EXPECT_FALSE(ParseRfc3339("2026-13-01T00:00:00Z"));
  EXPECT_FALSE(ParseRfc3339("yesterday"));
}

TEST(FormatRfc3339, RoundTrips) {
  Micros t = *ParseRfc3339("2026-02-28T23:59:59Z");
  EXPECT_EQ(FormatRfc3339(t), "2026-02-28T23:59:59Z");
}

TEST(ParseDuration, Units) {
  EXPECT_EQ(*ParseDuration("90"), 90 * kMicrosPerSecond);
  EXPECT_EQ(*ParseDuration("15m"), 900 * kMicrosPerSecond);
  EXPECT_EQ(*ParseDuration("168h"), 168 * kMicrosPerHour);
  EXPECT_EQ(*ParseDuration("7d"), 168 * kMicrosPerHour);
  EXPECT_EQ(*ParseDuration("1h30m"), 5400 * kMicrosPerSecond);
  EXPECT_EQ(*ParseDuration("0.5s"), 500'000);
  EXPECT_FALSE(ParseDuration("fortnight"));
  EXPECT_FALSE(ParseDuration(""));
}

// What comes from a user, a file or the wire is range-checked where it becomes µs, so that no
// sum or difference of instants and durations can wrap (issue 29: a window of
// -9223372036854,9223372036854 unix seconds wrapped its own length and exhausted the host).
TEST(InstantFromUnixMillis, WithinTheCalendarOnly) {
  EXPECT_EQ(*InstantFromUnixMillis(0), 0);
  EXPECT_EQ(*InstantFromUnixMillis(1795392000123), 1795392000123000);
  EXPECT_EQ(*InstantFromUnixMillis(kMaxInstantUs / 1000 - 1), kMaxInstantUs - 1000);
  EXPECT_EQ(InstantFromUnixMillis(-1).error().message, "-1 ms is outside 1970-01-01 .. 9999-12-31");
  EXPECT_FALSE(InstantFromUnixMillis(kMaxInstantUs / 1000).ok());
  EXPECT_FALSE(InstantFromUnixMillis(INT64_MAX).ok());  // would wrap as µs
}

TEST(ParseInstant, UnixSecondsOrRfc3339WithinTheCalendar) {
  EXPECT_EQ(*ParseInstant("0"), 0);
  EXPECT_EQ(*ParseInstant("1795392000"), 1795392000LL * kMicrosPerSecond);
  EXPECT_EQ(*ParseInstant("2026-11-23T00:00:00Z"), 1795392000LL * kMicrosPerSecond);
  EXPECT_EQ(*ParseInstant("253402300799"), kMaxInstantUs - kMicrosPerSecond);
  for (const char* bad : {"-1", "-9223372036854", "9223372036854", "253402300800",
                          "99999999999999999999999", "1969-12-31T23:59:59Z", "x"}) {
    EXPECT_FALSE(ParseInstant(bad).ok()) << bad;
  }
  EXPECT_TRUE(ParseRfc3339("9999-12-31T23:59:59Z").ok());
  EXPECT_FALSE(ParseRfc3339("2026-11-23T00:00:00+25:00").ok());
  EXPECT_FALSE(ParseRfc3339("2026-11-23T00:00:00+01:60").ok());
}

TEST(ParseDuration, RefusesWhatCouldWrap) {
  EXPECT_EQ(*ParseDuration("2920000d"), 2'920'000LL * 86400 * kMicrosPerSecond);  // 8,000 years
  for (const char* bad : {"3000000d", "9223372036854775807s", "1e300s", "2000000d2000000d"}) {
    EXPECT_FALSE(ParseDuration(bad).ok()) << bad;
  }
}

TEST(ParseBytes, Units) {
  EXPECT_EQ(*ParseBytes("20GiB"), 20 * kGiB);
  EXPECT_EQ(*ParseBytes("1.5GB"), 1'500'000'000);
  EXPECT_EQ(*ParseBytes("4096"), 4096);
  EXPECT_FALSE(ParseBytes("20 parsecs"));
  // Past int64 bytes: refused, naming the text, never a wrapped size.
  auto huge = ParseBytes("1e30GB");
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.error().message.find("'1e30GB'"), std::string::npos);
}

TEST(HourStart, FloorsToTheHour) {
  EXPECT_EQ(HourStart(kMicrosPerHour + 5), kMicrosPerHour);
  EXPECT_EQ(HourStart(kMicrosPerHour), kMicrosPerHour);
  EXPECT_EQ(HourStart(-1), -kMicrosPerHour);
}

TEST(CivilDates, KnownDays) {
  EXPECT_EQ(DaysFromCivil(1970, 1, 1), 0);
  EXPECT_EQ(DaysFromCivil(1969, 12, 31), -1);
  EXPECT_EQ(DaysFromCivil(2000, 3, 1), 11'017);
  EXPECT_EQ(DaysFromCivil(2024, 2, 29), 19'782);  // 54 years with 13 leap days, then 31 + 28
  EXPECT_EQ(CivilFromDays(19'782), (CivilDate{2024, 2, 29}));
  EXPECT_EQ(CivilFromDays(-1), (CivilDate{1969, 12, 31}));
}

// Against a calendar walked one day at a time, 1600-01-01 to 2400-12-31 (leap centuries, the
// Unix epoch and negative days on the way).
TEST(CivilDates, AgreeWithACalendarWalkedDayByDay) {
  auto leap = [](std::int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; };
  const unsigned month_days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  std::int64_t days = DaysFromCivil(1600, 1, 1);
  CivilDate date{1600, 1, 1};
  while (date.year <= 2400) {
    ASSERT_EQ(CivilFromDays(days), date) << days;
    ASSERT_EQ(DaysFromCivil(date.year, date.month, date.day), days);
    const unsigned last = month_days[date.month - 1] + (date.month == 2 && leap(date.year) ? 1 : 0);
    if (++date.day > last) {
      date.day = 1;
      if (++date.month > 12) {
        date.month = 1;
        ++date.year;
      }
    }
    ++days;
  }
  EXPECT_EQ(DaysFromCivil(1600, 1, 1), -135'140);  // 370 years, 90 of them leap, before 1970
}

}  // namespace
}  // namespace gpuledger
