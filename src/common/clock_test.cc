#include "common/clock.h"

#include <gtest/gtest.h>

namespace gpuledger {
namespace {

constexpr Micros kT0 = 1'800'000'000LL * kMicrosPerSecond;
constexpr Micros kS = kMicrosPerSecond;

TEST(IntervalBetween, LengthIsMonotonicAndEndIsWall) {
  const ClockReading a{kT0, 5 * kS};
  // An ordinary second, a few µs of skew between the two clocks: no step.
  ClockInterval i = IntervalBetween(a, {kT0 + kS + 7, 6 * kS});
  EXPECT_EQ(i.end_us, kT0 + kS + 7);
  EXPECT_EQ(i.duration_us(), kS);
  EXPECT_EQ(i.wall_step_us, 0);
  // The wall clock stepped forward an hour during the second: still a second
  // long.
  i = IntervalBetween(a, {kT0 + 3601 * kS, 6 * kS});
  EXPECT_EQ(i.duration_us(), kS);
  EXPECT_EQ(i.start_us, kT0 + 3600 * kS);
  EXPECT_EQ(i.wall_step_us, 3600 * kS);
  // Back an hour: a second long, not zero (and not negative).
  i = IntervalBetween(a, {kT0 - 3599 * kS, 6 * kS});
  EXPECT_EQ(i.duration_us(), kS);
  EXPECT_EQ(i.wall_step_us, -3600 * kS);
}

TEST(IntervalBetween, ToleranceBoundsWhatCountsAsAStep) {
  const ClockReading a{kT0, 0};
  EXPECT_EQ(IntervalBetween(a, {kT0 + 2 * kS, kS}).wall_step_us,
            0);  // exactly 1 s: slew
  EXPECT_EQ(IntervalBetween(a, {kT0 + 2 * kS + 1, kS}).wall_step_us, kS + 1);
  EXPECT_EQ(IntervalBetween(a, {kT0 - 1, kS}).wall_step_us, -kS - 1);
  EXPECT_EQ(IntervalBetween(a, {kT0 + 2 * kS + 1, kS}, 2 * kS).wall_step_us, 0);
}

TEST(IntervalBetween, MonotonicClockGoingBackIsAnEmptyInterval) {
  const ClockInterval i = IntervalBetween({kT0, 10 * kS}, {kT0 + kS, 9 * kS});
  EXPECT_EQ(i.duration_us(), 0);
  EXPECT_EQ(i.end_us, kT0 + kS);
}

TEST(ManualClock, StepsTheWallClockAlone) {
  ManualClock c(kT0, 0);
  c.Advance(kS);
  c.StepWall(-3600 * kS);
  EXPECT_EQ(c.Now(), (ClockReading{kT0 + kS - 3600 * kS, kS}));
  c.Set(kT0);
  EXPECT_EQ(c.Now(), (ClockReading{kT0, kT0}));
}

TEST(SystemClock, ReadsBothClocks) {
  SystemClock c;
  const ClockReading a = c.Now();
  const ClockReading b = c.Now();
  EXPECT_GT(a.wall_us, 1'600'000'000LL * kS);  // after 2020
  EXPECT_GE(b.mono_us, a.mono_us);
}

}  // namespace
}  // namespace gpuledger
