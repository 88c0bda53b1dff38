// Pricing findings from hand-written ledger rows, integer for integer; idle runs found by hand.
#include "guardrails/price_findings.h"

#include <gtest/gtest.h>

namespace gpuledger::guardrails {
namespace {

constexpr Micros kH0 = 1000 * kMicrosPerHour;
const ConsumerRef kDebug{"ml", "debug", PodUid{"u1"}, "main"};
const ConsumerRef kNotebook{"nb", "jupyter", PodUid{"u2"}, "main"};

DeviceHour Hour(Micros hour_us, Nanos price, GpuMicros metered = kMicrosPerHour) {
  DeviceHour d;
  d.hour_us = hour_us;
  d.node = "n1";
  d.gpu = GpuUuid{"GPU-1"};
  d.price_nanos = price;
  d.metered_us = metered;
  d.memory_total_bytes = 80 * kGiB;
  return d;
}

UsageRow Row(Micros hour_us, const ConsumerRef& who, GpuMicros allocated, GpuMicros compute) {
  UsageRow r;
  r.hour_us = hour_us;
  r.gpu = GpuUuid{"GPU-1"};
  r.node = "n1";
  r.consumer.ref = who;
  r.allocated_us = allocated;
  r.compute_us = compute;
  return r;
}

Finding Of(FindingKind kind, const ConsumerRef& who, Micros from, Micros to,
           std::string evidence = "") {
  Finding f;
  f.kind = kind;
  f.node = "n1";
  f.subject = who;
  f.gpu_uuid = "GPU-1";
  f.first_seen_us = from;
  f.last_seen_us = to;
  f.resolved_us = to;
  f.evidence = std::move(evidence);
  return f;
}

TEST(PriceFindings, ComputeWithoutAGrantAtEachHoursOwnPrice) {
  // $3.00 then $3.60 an hour (the second hour only 30 min metered, priced $1.80).
  std::vector<DeviceHour> devices{Hour(kH0, 3'000'000'000),
                                  Hour(kH0 + kMicrosPerHour, 1'800'000'000, kMicrosPerHour / 2)};
  // 1/3 GPU-hour, then 1/7 of the half hour metered.
  std::vector<UsageRow> usage{Row(kH0, kDebug, 0, kMicrosPerHour / 3),
                              Row(kH0 + kMicrosPerHour, kDebug, 0, kMicrosPerHour / 14)};
  std::vector<Finding> f{
      Of(FindingKind::kUnallocatedAccess, kDebug, kH0, kH0 + 90 * 60 * kMicrosPerSecond)};
  auto priced = PriceFindings(f, devices, usage);
  ASSERT_EQ(priced.size(), 1u);
  EXPECT_EQ(priced[0].gpu_us, 1'200'000'000 + 257'142'857);
  // 3e9 x 1.2e9 / 3.6e9 = 1e9 exactly; 1.8e9 x 257142857 / 1.8e9 = 257142857.
  EXPECT_EQ(priced[0].cost_nanos, 1'000'000'000 + 257'142'857);
  EXPECT_EQ(priced[0].cost_basis, "compute used beyond the grant, at the device's price");
}

TEST(PriceFindings, EachHourRoundsHalfUp) {
  std::vector<DeviceHour> devices{Hour(kH0, 1)};  // 1 nano an hour
  std::vector<UsageRow> usage{Row(kH0, kDebug, 0, kMicrosPerHour / 2)};
  auto priced = PriceFindings(
      std::vector<Finding>{Of(FindingKind::kUnmanagedProcess, kDebug, kH0, kH0 + kMicrosPerHour)},
      devices, usage);
  EXPECT_EQ(priced[0].cost_nanos, 1) << "half a nano rounds up";
}

TEST(PriceFindings, StaleGrantHoldsItsShareWhileListed) {
  std::vector<DeviceHour> devices{Hour(kH0, 3'600'000'000),
                                  Hour(kH0 + kMicrosPerHour, 3'600'000'000)};
  // A quarter of the GPU from 00:45 to 01:15: 15 min in each hour.
  auto f = Of(FindingKind::kStaleGrant, kDebug, kH0 + 45 * 60 * kMicrosPerSecond,
              kH0 + 75 * 60 * kMicrosPerSecond,
              "device_id=GPU-1::2 share_ppd=" + std::to_string(kWholeGpu / 4));
  auto priced = PriceFindings(std::vector<Finding>{f}, devices, {});
  EXPECT_EQ(priced[0].gpu_us, 2 * 15 * 60 * kMicrosPerSecond / 4);
  EXPECT_EQ(priced[0].cost_nanos, 2 * 225'000'000);  // $3.60/h x 1/4 x 1/4 h, twice
}

TEST(PriceFindings, MemoryOverACapIsASliceOfTheCard) {
  std::vector<DeviceHour> devices{Hour(kH0, 8'000'000'000)};
  UsageRow r = Row(kH0, kDebug, kMicrosPerHour / 4, 0);
  r.memory_kib_s = 30LL * 1024 * 1024 * 3600;  // 30 GiB all hour
  auto f = Of(FindingKind::kIsolationBreach, kDebug, kH0, kH0 + kMicrosPerHour,
              "memory_bytes=32212254720 declared_memory_bytes=" + std::to_string(20 * kGiB));
  auto priced = PriceFindings(std::vector<Finding>{f}, devices, std::vector<UsageRow>{r});
  // 10 GiB over of 80 GiB for an hour: 1/8 GPU-hour, $1.
  EXPECT_EQ(priced[0].gpu_us, kMicrosPerHour / 8);
  EXPECT_EQ(priced[0].cost_nanos, 1'000'000'000);
}

TEST(DetectIdleAllocations, ARunOfIdleHoursLongEnough) {
  Policy p = DefaultPolicy();
  p.idle_allocation_hours = 3;
  std::vector<UsageRow> usage;
  // Hours 0-3 idle (1% of the allocation is still idle), hour 4 busy, hours 5-6 idle.
  for (int h = 0; h < 7; ++h)
    usage.push_back(Row(kH0 + h * kMicrosPerHour, kNotebook, kMicrosPerHour,
                        h == 4 ? kMicrosPerHour / 2 : kMicrosPerHour / 100));
  auto found = DetectIdleAllocations(usage, p, "c", kH0 + 7 * kMicrosPerHour);
  ASSERT_EQ(found.size(), 1u) << "the run of 2 is too short";
  EXPECT_EQ(found[0].first_seen_us, kH0);
  EXPECT_EQ(found[0].last_seen_us, kH0 + 4 * kMicrosPerHour);
  EXPECT_EQ(found[0].resolved_us, kH0 + 4 * kMicrosPerHour) << "it got busy";
  EXPECT_EQ(found[0].evidence, "hours=4 allocated_gpu_us=14400000000 compute_gpu_us=144000000");
  auto priced = PriceFindings(
      found,
      std::vector<DeviceHour>{Hour(kH0, 1'000'000'000), Hour(kH0 + kMicrosPerHour, 1'000'000'000),
                              Hour(kH0 + 2 * kMicrosPerHour, 1'000'000'000),
                              Hour(kH0 + 3 * kMicrosPerHour, 1'000'000'000)},
      usage);
  EXPECT_EQ(priced[0].cost_nanos, 4'000'000'000);
  p.exemptions.push_back(Exemption{"nb", {}, {}, 1});
  EXPECT_TRUE(DetectIdleAllocations(usage, p, "c", kH0).empty());
}

}  // namespace
}  // namespace gpuledger::guardrails
