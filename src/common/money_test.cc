#include "common/money.h"

#include <gtest/gtest.h>

#include <limits>

namespace gpuledger {
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
  for (const char* bad :
       {"", "-", "abc", "1e3", "1,000", "$5", "1.0000000001", "1.2.3", "99999999999999999999"}) {
    EXPECT_FALSE(NanosFromDecimal(bad).ok()) << bad;
  }
}

TEST(NanosFromDecimal, ExactFromTheText) {
  EXPECT_EQ(*NanosFromDecimal("6.88"), 6'880'000'000);  // 6.88 is not exact as a double
  EXPECT_EQ(*NanosFromDecimal("0.1"), 100'000'000);
  EXPECT_EQ(*NanosFromDecimal("0.000000001"), 1);
  EXPECT_EQ(*NanosFromDecimal("3.430881250"), 3'430'881'250);
  EXPECT_EQ(*NanosFromDecimal("007.5"), 7'500'000'000);
  EXPECT_EQ(*NanosFromDecimal("0"), 0);
  EXPECT_EQ(*NanosFromDecimal("9223372036.854775807"), INT64_MAX);
  for (const char* bad : {"6.88e0", "9223372036.854775808", "99999999999", " 1", "1 ", "0x10"})
    EXPECT_FALSE(NanosFromDecimal(bad)) << bad;
  EXPECT_EQ(NanosFromDecimal("1.2345678901").error().message,
            "'1.2345678901' is not a decimal amount: more than 9 decimal places (finer than a "
            "nano)");
}

// Every amount formats to text that parses back to the same nanos.
TEST(DecimalFromNanos, RoundTripsThroughTheParser) {
  for (Nanos n : {Nanos{0}, Nanos{1}, Nanos{-1}, Nanos{6'880'000'000}, Nanos{-1'500'000'000},
                  Nanos{INT64_MAX}, Nanos{INT64_MIN + 1}}) {
    auto back = NanosFromDecimal(DecimalFromNanos(n));
    ASSERT_TRUE(back) << n;
    EXPECT_EQ(*back, n);
  }
}

TEST(DecimalRatio, RoundsHalfAwayFromZero) {
  EXPECT_EQ(DecimalRatio(1, 3, 9), "0.333333333");
  EXPECT_EQ(DecimalRatio(2, 3, 9), "0.666666667");
  EXPECT_EQ(DecimalRatio(3'600'000'000, 3'600'000'000, 9), "1");
  EXPECT_EQ(DecimalRatio(-1, 2, 0), "-1");
}

}  // namespace
}  // namespace gpuledger
