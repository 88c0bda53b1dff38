// HeldDevices' bounds: the days a write drops, and a compaction that keeps every GPU's
// placement, layouts and figures. (Its answers are checked against one snapshot of the window
// in reports_property_test.cc, DaysHeldInMemoryAnswerAsTheirRows.)
#include "ledger/held_devices.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuledger::ledger {
namespace {

constexpr Micros kDay0 = 20'000 * kMicrosPerDay;

// `gpus` GPUs named "<prefix><i>", each on layout "L<i % 3>" and costing `cost` nanos.
std::vector<DeviceSummary> ADay(const std::string& prefix, int gpus, Nanos cost) {
  std::vector<DeviceSummary> day;
  for (int i = 0; i < gpus; ++i) {
    DeviceSummary& d = day.emplace_back();
    d.placement.gpu = GpuUuid(prefix + std::to_string(1000 + i));
    d.placement.node = "node-" + std::to_string(i / 8);
    d.placement.layout = "L" + std::to_string(i % 3);
    d.layouts = {d.placement.layout};
    d.busy_us = i;
    d.cost_nanos = cost;
  }
  return day;
}

TEST(HeldDevices, AWriteDropsTheDaysItTouches) {
  HeldDevices held;
  for (int d = 0; d < 4; ++d) held.Hold(kDay0 + d * kMicrosPerDay, held.Intern(ADay("GPU-", 3, d)));
  held.Drop(
      {kDay0 + 2 * kMicrosPerDay - kMicrosPerHour, kDay0 + 2 * kMicrosPerDay + kMicrosPerHour});
  EXPECT_NE(held.Find(kDay0), nullptr);
  EXPECT_EQ(held.Find(kDay0 + kMicrosPerDay), nullptr);
  EXPECT_EQ(held.Find(kDay0 + 2 * kMicrosPerDay), nullptr);
  EXPECT_NE(held.Find(kDay0 + 3 * kMicrosPerDay), nullptr);
  held.DropBefore(kDay0 + kMicrosPerDay);
  EXPECT_EQ(held.days(), 1u);
}

// Days summed: a GPU keeps its first day's placement, its layouts in the order they first
// appeared, its figures summed; a compaction after GPUs came and went changes none of it.
TEST(HeldDevices, CompactionKeepsEveryGpuAsItWas) {
  HeldDevices held;
  std::vector<DeviceSummary> moved = ADay("GPU-", 5000, 7);
  for (DeviceSummary& d : moved) {
    d.placement.layout = "moved";
    d.layouts = {"moved"};
  }
  held.Hold(kDay0, held.Intern(ADay("OLD-", 5000, 1)));  // GPUs that leave
  held.Hold(kDay0 + kMicrosPerDay, held.Intern(ADay("GPU-", 5000, 2)));
  held.Hold(kDay0 + 2 * kMicrosPerDay, held.Intern(moved));
  auto sum = [&] {
    return held.Sum({held.Find(kDay0 + kMicrosPerDay), held.Find(kDay0 + 2 * kMicrosPerDay)});
  };
  const std::vector<DeviceSummary> before = sum();
  ASSERT_EQ(before.size(), 5000u);
  EXPECT_EQ(before[4].placement.gpu.value, "GPU-1004");
  EXPECT_EQ(before[4].placement.layout, "L1");  // the first day's
  EXPECT_EQ(before[4].layouts, (std::vector<std::string>{"L1", "moved"}));
  EXPECT_EQ(before[4].busy_us, 8);
  EXPECT_EQ(before[4].cost_nanos, 9);

  held.DropBefore(kDay0 + kMicrosPerDay);
  held.Compact();
  const std::vector<DeviceSummary> after = sum();
  ASSERT_EQ(after.size(), before.size());
  for (std::size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].placement, before[i].placement) << i;
    EXPECT_EQ(after[i].layouts, before[i].layouts) << i;
    EXPECT_EQ(after[i].busy_us, before[i].busy_us) << i;
    EXPECT_EQ(after[i].cost_nanos, before[i].cost_nanos) << i;
  }
  // The same GPUs interned again after it: the same heads.
  const HeldDevices::Part again = held.Intern(ADay("GPU-", 5000, 2));
  EXPECT_EQ(held.Sum({&again}).size(), 5000u);
}

}  // namespace
}  // namespace gpuledger::ledger
