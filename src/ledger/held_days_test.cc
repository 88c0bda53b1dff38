// HeldDays' bounds: the kinds it holds, the days a write drops, and the tables it lets go of
// once the days naming their entries are gone. (Its answers are checked against the plain
// computation in reports_property_test.cc, DaysHeldInMemoryAnswerAsTheirRows.)
#include "ledger/held_days.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuledger::ledger {
namespace {

constexpr Micros kDay0 = 20'000 * kMicrosPerDay;

// A day of `rows` rows, the i-th naming entry "<prefix><i>" and costing i nanos.
SummedDay ADay(HeldDays& held, Micros day_us, const std::string& prefix, int rows) {
  SummedDay day;
  day.from_us = day_us;
  day.to_us = day_us + kMicrosPerDay;
  for (int i = 0; i < rows; ++i) {
    SummedRow row;
    row.entry = held.tables().Entry(prefix + std::to_string(i));
    row.numbers[4] = i;
    row.rules[0] = held.tables().Rule(i % 2 == 0 ? "even" : "");
    day.rows.push_back(row);
  }
  return day;
}

TEST(HeldDays, AWriteDropsTheDaysItTouches) {
  HeldDays held;
  for (int d = 0; d < 4; ++d) held.Hold("k", ADay(held, kDay0 + d * kMicrosPerDay, "e", 3));
  // The last hour of day 1 and the first of day 2.
  held.Drop(
      {kDay0 + 2 * kMicrosPerDay - kMicrosPerHour, kDay0 + 2 * kMicrosPerDay + kMicrosPerHour});
  EXPECT_NE(held.Find("k", kDay0), nullptr);
  EXPECT_EQ(held.Find("k", kDay0 + kMicrosPerDay), nullptr);
  EXPECT_EQ(held.Find("k", kDay0 + 2 * kMicrosPerDay), nullptr);
  EXPECT_NE(held.Find("k", kDay0 + 3 * kMicrosPerDay), nullptr);
  held.DropBefore(kDay0 + kMicrosPerDay);
  EXPECT_EQ(held.Find("k", kDay0), nullptr);
  EXPECT_EQ(held.days(), 1u);
}

TEST(HeldDays, HoldsTheMostRecentlyUsedKinds) {
  HeldDays held;
  for (std::size_t k = 0; k < HeldDays::kHeldKinds; ++k)
    held.Hold("kind " + std::to_string(k), ADay(held, kDay0, "e", 1));
  ASSERT_NE(held.Find("kind 0", kDay0), nullptr);  // used: kind 1 is now the least used
  held.Hold("one more", ADay(held, kDay0, "e", 1));
  EXPECT_NE(held.Find("kind 0", kDay0), nullptr);
  EXPECT_EQ(held.Find("kind 1", kDay0), nullptr);
  EXPECT_NE(held.Find("one more", kDay0), nullptr);
  EXPECT_EQ(held.days(), HeldDays::kHeldKinds);
}

// Consumers come and go: once the days naming most entries are let go, the tables are read
// again with only the held days' entries, each row still naming its own text and rules.
TEST(HeldDays, LetsGoOfEntriesNoHeldDayNames) {
  HeldDays held;
  const int rows = 70'000;  // past the size below which tables are never compacted
  held.Hold("k", ADay(held, kDay0, "gone-", rows));
  held.Hold("k", ADay(held, kDay0 + kMicrosPerDay, "kept-", rows));
  held.Compact();  // nothing let go yet: nothing to do
  EXPECT_EQ(held.tables().entries(), 2u * rows);
  held.DropBefore(kDay0 + kMicrosPerDay);
  held.Compact();
  EXPECT_EQ(held.tables().entries(), static_cast<std::size_t>(rows));
  const SummedDay* day = held.Find("k", kDay0 + kMicrosPerDay);
  ASSERT_NE(day, nullptr);
  for (int i = 0; i < rows; i += 9'999) {
    const SummedRow& row = day->rows[i];
    EXPECT_EQ(held.tables().entry(row.entry), "kept-" + std::to_string(i));
    EXPECT_EQ(row.numbers[4], i);
    EXPECT_EQ(held.tables().rules()[row.rules[0]], i % 2 == 0 ? "even" : "");
  }
  // Tables that have not doubled since are left as they are.
  held.Hold("k", ADay(held, kDay0 + 2 * kMicrosPerDay, "new-", rows / 2));
  held.DropBefore(kDay0 + 2 * kMicrosPerDay);
  held.Compact();
  EXPECT_EQ(held.tables().entries(), rows + rows / 2u);
}

}  // namespace
}  // namespace gpuledger::ledger
