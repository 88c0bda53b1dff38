#include "common/time_util.h"

#include <gtest/gtest.h>

namespace gpuledger {
namespace {

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

TEST(ParseBytes, Units) {
  EXPECT_EQ(*ParseBytes("20GiB"), 20 * kGiB);
  EXPECT_EQ(*ParseBytes("1.5GB"), 1'500'000'000);
  EXPECT_EQ(*ParseBytes("4096"), 4096);
  EXPECT_FALSE(ParseBytes("20 parsecs"));
}

TEST(HourStart, FloorsToTheHour) {
  EXPECT_EQ(HourStart(kMicrosPerHour + 5), kMicrosPerHour);
  EXPECT_EQ(HourStart(kMicrosPerHour), kMicrosPerHour);
  EXPECT_EQ(HourStart(-1), -kMicrosPerHour);
}

}  // namespace
}  // namespace gpuledger
