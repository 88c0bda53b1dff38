#include "common/rounding.h"

#include <gtest/gtest.h>

#include <limits>

namespace gpuledger {
namespace {

TEST(RoundToInt64, RoundsHalfAwayFromZero) {
  EXPECT_EQ(RoundToInt64(2.5), 3);
  EXPECT_EQ(RoundToInt64(-2.5), -3);
  EXPECT_EQ(RoundToInt64(0.49), 0);
  EXPECT_EQ(RoundToInt64(1e15), 1'000'000'000'000'000);
}

// What std::llround leaves undefined is refused: NaN, the infinities, and the first doubles
// past int64 at either end. The last doubles inside are kept, exactly.
TEST(RoundToInt64, RefusesWhatLlroundLeavesUndefined) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(RoundToInt64(std::numeric_limits<double>::quiet_NaN()));
  EXPECT_FALSE(RoundToInt64(kInf));
  EXPECT_FALSE(RoundToInt64(-kInf));
  EXPECT_FALSE(RoundToInt64(9223372036854775808.0));   // 2^63
  EXPECT_FALSE(RoundToInt64(-9223372036854777856.0));  // the double below -2^63
  EXPECT_FALSE(RoundToInt64(1e300));
  EXPECT_EQ(RoundToInt64(-9223372036854775808.0), INT64_MIN);
  EXPECT_EQ(RoundToInt64(9223372036854774784.0), 9223372036854774784);  // 2^63 - 1024
}

// One rounding of an integer quotient for every caller (rightsizing's prices and savings, the
// workload summaries' shares): half up on a tie, also below zero, and held to int64.
TEST(RoundHalfUp, RoundsTiesUpAndHoldsToInt64) {
  EXPECT_EQ(RoundHalfUp(5, 2), 3);    // 2.5
  EXPECT_EQ(RoundHalfUp(-5, 2), -2);  // -2.5: up, toward +infinity
  EXPECT_EQ(RoundHalfUp(7, 3), 2);    // 2.33
  EXPECT_EQ(RoundHalfUp(-7, 3), -2);  // -2.33
  EXPECT_EQ(RoundHalfUp(-8, 3), -3);  // -2.67
  EXPECT_EQ(RoundHalfUp(0, 9), 0);
  const __int128 huge = static_cast<__int128>(INT64_MAX) * 1000;
  EXPECT_EQ(RoundHalfUp(huge, 1), INT64_MAX);
  EXPECT_EQ(RoundHalfUp(-huge, 1), INT64_MIN);
}

}  // namespace
}  // namespace gpuledger
