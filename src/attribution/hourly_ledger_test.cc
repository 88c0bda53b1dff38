#include "attribution/hourly_ledger.h"

#include <gtest/gtest.h>

#include "attribution/attribute.h"

namespace gpuledger::attribution {
namespace {

ConsumerInfo Describe(const ConsumerRef& r) { return ConsumerInfo{r, "Job", "train", {{"team", "ml"}}, {}}; }

// A 3g instance of a 7-slice GPU held for a whole hour in 60 s intervals: 3/7 of an hour is not
// a whole number of µs, yet the row is the exact value rounded once and the hour sums exactly.
TEST(HourlyLedger, MigAllocationIsExactPerHourWhateverTheInterval) {
  HourlyLedger ledger(Describe);
  ConsumerRef pod{"ml", "train-0", PodUid{"u"}, "main"};
  for (Micros t = 0; t < kMicrosPerHour; t += 60 * kMicrosPerSecond) {
    NodeSnapshot s;
    s.node = "n";
    s.start_us = t;
    s.end_us = t + 60 * kMicrosPerSecond;
    s.gpus.push_back(PhysicalGpu{GpuUuid{"GPU-h"}, "H200-141GB", 141 * kGiB, SharingMode::kMig, 1, 7});
    s.mig_instances.push_back(MigInstance{GpuUuid{"MIG-3"}, GpuUuid{"GPU-h"}, "3g.71gb", 3, 71 * kGiB});
    s.grants.push_back(Grant{pod, "MIG-3", "nvidia.com/mig-3g.71gb", {}, ""});
    ledger.Add(NodeContext{"c", "n", "on-demand"}, Attribute(s));
  }
  auto hours = ledger.TakeAll();
  ASSERT_EQ(hours.size(), 1u);
  const LedgerHour& h = hours[0];
  ASSERT_EQ(h.usage.size(), 1u);
  // 3,600,000,000 x 3/7 = 1,542,857,142.857...
  EXPECT_EQ(h.usage[0].allocated_us, 1'542'857'143);
  EXPECT_EQ(h.device.unallocated_us, 2'057'142'857);
  EXPECT_EQ(h.device.metered_us, kMicrosPerHour);
  EXPECT_EQ(h.usage[0].consumer.owner_kind, "Job");
  EXPECT_EQ(h.usage[0].consumer.labels.at("team"), "ml");
}

TEST(HourlyLedger, TakeHoursBeforeLeavesOpenHours) {
  HourlyLedger ledger(Describe);
  for (Micros start : {Micros{0}, kMicrosPerHour}) {
    NodeSnapshot s;
    s.start_us = start;
    s.end_us = start + kMicrosPerHour / 2;
    s.gpus.push_back(PhysicalGpu{GpuUuid{"GPU-x"}, "L4", 24 * kGiB, SharingMode::kExclusive, 1, 7});
    ledger.Add(NodeContext{"c", "n", "spot"}, Attribute(s));
  }
  auto closed = ledger.TakeHoursBefore(kMicrosPerHour);
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(closed[0].device.unmetered_us, kMicrosPerHour / 2);
  EXPECT_EQ(closed[0].device.pricing_class, "spot");
  EXPECT_EQ(ledger.TakeAll().size(), 1u);
}

}  // namespace
}  // namespace gpuledger::attribution
