#include "attribution/close_hour.h"

#include <gtest/gtest.h>

#include <random>

namespace gpuledger::attribution {
namespace {

UsageRow Row(std::string pod, GpuMicros allocated, GpuMicros compute, MilliJoules energy) {
  UsageRow r;
  r.consumer.ref = ConsumerRef{"ns", std::move(pod), PodUid{"u"}, "main"};
  r.allocated_us = allocated;
  r.compute_us = compute;
  r.energy_mj = energy;
  r.memory_kib_s = 7;
  return r;
}

TEST(CloseDeviceHour, ConservingAccumulatorsComeOutUnchanged) {
  OpenDeviceHour open;
  open.device.hour_us = 7 * kMicrosPerHour;
  open.device.metered_us = 1'800'000'000;
  open.device.busy_us = 900'000'000;
  open.device.idle_us = 900'000'000;
  open.device.unattributed_us = 100'000'000;
  open.device.energy_mj = 1'000'000;
  open.usage = {Row("a", 600'000'000, 500'000'000, 400'000),
                Row("b", 300'000'000, 300'000'000, 300'000)};
  LedgerHour h = CloseDeviceHour(open);
  EXPECT_EQ(h.device.unmetered_us, 1'800'000'000);
  EXPECT_EQ(h.device.unallocated_us, 900'000'000);
  EXPECT_EQ(h.device.busy_us, 900'000'000);
  EXPECT_EQ(h.usage[0].allocated_us, 600'000'000);
  EXPECT_EQ(h.usage[1].compute_us, 300'000'000);
  EXPECT_EQ(h.device.unattributed_us, 100'000'000);
  // 300 J unexplained, split 1:8 between unattributed (100 s) and idle (900 s) time.
  EXPECT_EQ(h.device.unattributed_energy_mj, 30'000);
  EXPECT_EQ(h.device.idle_energy_mj, 270'000);
  EXPECT_EQ(h.usage[0].hour_us, 7 * kMicrosPerHour);
  EXPECT_EQ(h.usage[1].memory_kib_s, 7);
}

TEST(CloseDeviceHour, GrantsOverTheMeteredTimeAreScaledDownExactly) {
  OpenDeviceHour open;
  open.device.metered_us = 1000;
  open.device.idle_us = 1000;
  open.usage = {Row("a", 1000, 0, 0), Row("b", 1000, 0, 0), Row("c", 1000, 0, 0)};
  LedgerHour h = CloseDeviceHour(open);
  EXPECT_EQ(h.usage[0].allocated_us, 334);  // ties go to the lower index
  EXPECT_EQ(h.usage[1].allocated_us, 333);
  EXPECT_EQ(h.usage[2].allocated_us, 333);
  EXPECT_EQ(h.device.unallocated_us, 0);
}

TEST(CloseDeviceHour, RandomAccumulatorsAlwaysConserve) {
  std::mt19937_64 rng(20261203);
  auto r = [&](std::int64_t n) {
    return static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(n)) - n / 10;
  };
  for (int trial = 0; trial < 10'000; ++trial) {
    OpenDeviceHour open;
    open.device.metered_us = r(kMicrosPerHour + kMicrosPerHour / 5);
    open.device.busy_us = r(kMicrosPerHour);
    open.device.idle_us = r(kMicrosPerHour);
    open.device.unattributed_us = r(kMicrosPerHour);
    open.device.energy_mj = r(10'000'000);
    const int n = static_cast<int>(rng() % 6);
    for (int i = 0; i < n; ++i)
      open.usage.push_back(
          Row(std::to_string(i), r(kMicrosPerHour), r(kMicrosPerHour), r(1'000'000)));
    LedgerHour h = CloseDeviceHour(open);
    const DeviceHour& d = h.device;
    GpuMicros allocated = d.unallocated_us, compute = d.unattributed_us;
    MilliJoules energy = d.idle_energy_mj + d.unattributed_energy_mj;
    for (const UsageRow& u : h.usage) {
      allocated += u.allocated_us;
      compute += u.compute_us;
      energy += u.energy_mj;
      ASSERT_GE(u.allocated_us, 0);
      ASSERT_GE(u.compute_us, 0);
    }
    ASSERT_EQ(d.metered_us + d.unmetered_us, kMicrosPerHour) << trial;
    ASSERT_EQ(d.busy_us + d.idle_us, d.metered_us) << trial;
    ASSERT_EQ(compute, d.busy_us) << trial;
    ASSERT_EQ(allocated, d.metered_us) << trial;
    ASSERT_EQ(energy, d.energy_mj) << trial;
  }
}

// Activity, its source and the share source are in no identity: they come out as they went in.
TEST(CloseDeviceHour, ActivityAndSourcesPassThrough) {
  OpenDeviceHour open;
  open.device.metered_us = kMicrosPerHour;
  open.device.busy_us = kMicrosPerHour;
  UsageRow r = Row("a", kMicrosPerHour, kMicrosPerHour, 0);
  r.activity = Activity{180'000'000, 72'000'000, 0, -5};
  r.activity_quality = Quality::kEstimated;
  r.activity_rule = "compute-share+gpm";
  r.share_source = "env:CUDA_MPS_ACTIVE_THREAD_PERCENTAGE";
  open.usage = {r};
  LedgerHour h = CloseDeviceHour(open);
  ASSERT_EQ(h.usage.size(), 1u);
  EXPECT_EQ(h.usage[0].activity, (Activity{180'000'000, 72'000'000, 0, 0}));
  EXPECT_EQ(h.usage[0].activity_quality, Quality::kEstimated);
  EXPECT_EQ(h.usage[0].activity_rule, "compute-share+gpm");
  EXPECT_EQ(h.usage[0].share_source, "env:CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
}

}  // namespace
}  // namespace gpuledger::attribution
