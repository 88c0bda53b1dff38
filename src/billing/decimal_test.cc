#include "billing/decimal.h"

#include <gtest/gtest.h>

#include <limits>

namespace gpuledger::billing {
namespace {

TEST(DecimalFromNanos, ExactWithoutTrailingZeros) {
  EXPECT_EQ(DecimalFromNanos(0), "0");
  EXPECT_EQ(DecimalFromNanos(90'000'000'000), "90");
  EXPECT_EQ(DecimalFromNanos(1'500'000'000), "1.5");
  EXPECT_EQ(DecimalFromNanos(-5), "-0.000000005");
  EXPECT_EQ(DecimalFromNanos(12'345'678'901), "12.345678901");
  EXPECT_EQ(DecimalFromNanos(std::numeric_limits<Nanos>::min()), "-9223372036.854775808");
}

TEST(NanosFromDecimal, ParsesFocusNumbers) {
  EXPECT_EQ(*NanosFromDecimal("90"), 90'000'000'000);
  EXPECT_EQ(*NanosFromDecimal("90.00"), 90'000'000'000);
  EXPECT_EQ(*NanosFromDecimal("-1.5"), -1'500'000'000);
  EXPECT_EQ(*NanosFromDecimal("+0.000000005"), 5);
  EXPECT_EQ(*NanosFromDecimal(".5"), 500'000'000);
  EXPECT_EQ(*NanosFromDecimal("1.2345678900000"), 1'234'567'890);  // extra zeros are exact
}

TEST(NanosFromDecimal, RejectsWhatWouldNeedRounding) {
  for (const char* bad : {"", "-", "abc", "1e3", "1,000", "$5", "1.0000000001", "1.2.3",
                          "99999999999999999999"}) {
    EXPECT_FALSE(NanosFromDecimal(bad).ok()) << bad;
  }
}

TEST(DecimalRatio, RoundsHalfAwayFromZero) {
  EXPECT_EQ(DecimalRatio(1, 3, 9), "0.333333333");
  EXPECT_EQ(DecimalRatio(2, 3, 9), "0.666666667");
  EXPECT_EQ(DecimalRatio(3'600'000'000, 3'600'000'000, 9), "1");
  EXPECT_EQ(DecimalRatio(-1, 2, 0), "-1");
}

}  // namespace
}  // namespace gpuledger::billing
