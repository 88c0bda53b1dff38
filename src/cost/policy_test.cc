#include "cost/policy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <random>

namespace gpuledger::cost {
namespace {

constexpr GpuMicros kSec = kMicrosPerSecond;
constexpr GpuMicros kHour = kMicrosPerHour;
constexpr Nanos kDollar = kNanosPerUnit;

const IdleHandling kKeep{IdleHandling::Kind::kKeep, ""};
const IdleHandling kShare{IdleHandling::Kind::kShare, ""};
const IdleHandling kPlatform{IdleHandling::Kind::kNamespace, "platform"};

Policy Allocation() { return {PolicyKind::kAllocation, 1000}; }
Policy Compute() { return {PolicyKind::kCompute, 1000}; }
Policy Memory() { return {PolicyKind::kMemory, 1000}; }
Policy Hybrid(int permille) { return {PolicyKind::kHybrid, permille}; }

UsageRow Row(GpuMicros allocated_us, GpuMicros compute_us = 0, KibSeconds memory_kib_s = 0) {
  UsageRow r;
  r.allocated_us = allocated_us;
  r.compute_us = compute_us;
  r.memory_kib_s = memory_kib_s;
  return r;
}

Nanos Sum(const DeviceHourCost& c) {
  return std::accumulate(c.consumers.begin(), c.consumers.end(), Nanos{0}) + c.idle +
         c.unattributed;
}

// A time-sliced device-hour: 4 replicas, 3 held for the whole hour, 1 never held; $4.00/h.
DeviceHour TimeSliced() {
  DeviceHour d;
  d.sharing = SharingMode::kTimeSlicing;
  d.price_nanos = 4 * kDollar;
  d.metered_us = kHour;
  d.unallocated_us = kHour / 4;
  return d;
}

TEST(SplitDeviceHour, AllocationTimeSlicedQuarters) {
  std::vector<UsageRow> usage = {Row(kHour / 4), Row(kHour / 4), Row(kHour / 4)};
  auto c = SplitDeviceHour(TimeSliced(), usage, Allocation(), kKeep);
  EXPECT_EQ(c.consumers, (std::vector<Nanos>{kDollar, kDollar, kDollar}));
  EXPECT_EQ(c.idle, kDollar);
  EXPECT_EQ(c.unattributed, 0);
}

TEST(SplitDeviceHour, AllocationIdleShareSpreadsByAllocation) {
  std::vector<UsageRow> usage = {Row(kHour / 4), Row(kHour / 4), Row(kHour / 4)};
  auto c = SplitDeviceHour(TimeSliced(), usage, Allocation(), kShare);
  // $1.00 idle over three equal consumers: 333'333'334 + 333'333'333 + 333'333'333.
  EXPECT_EQ(c.consumers, (std::vector<Nanos>{1'333'333'334, 1'333'333'333, 1'333'333'333}));
  EXPECT_EQ(c.idle, 0);
  EXPECT_EQ(c.unattributed, 0);
}

TEST(SplitDeviceHour, NamespaceHandlingKeepsIdleInTheIdleBucket) {
  std::vector<UsageRow> usage = {Row(kHour / 4), Row(kHour / 4), Row(kHour / 4)};
  auto c = SplitDeviceHour(TimeSliced(), usage, Allocation(), kPlatform);
  EXPECT_EQ(c.consumers, (std::vector<Nanos>{kDollar, kDollar, kDollar}));
  EXPECT_EQ(c.idle, kDollar);
}

TEST(SplitDeviceHour, ComputeWithUnattributed) {
  DeviceHour d;
  d.price_nanos = 3'600'000'000;  // $3.60/h: 1'000'000 nanos per GPU-second
  d.metered_us = kHour;
  d.busy_us = 2700 * kSec;
  d.idle_us = 900 * kSec;
  d.unattributed_us = 900 * kSec;
  std::vector<UsageRow> usage = {Row(kHour / 2, 1200 * kSec), Row(kHour / 2, 600 * kSec)};
  auto c = SplitDeviceHour(d, usage, Compute(), kKeep);
  EXPECT_EQ(c.consumers, (std::vector<Nanos>{1'200'000'000, 600'000'000}));
  EXPECT_EQ(c.unattributed, 900'000'000);
  EXPECT_EQ(c.idle, 900'000'000);

  // Sharing the idle part moves it to consumers 2:1 by compute; unattributed stays.
  auto s = SplitDeviceHour(d, usage, Compute(), kShare);
  EXPECT_EQ(s.consumers, (std::vector<Nanos>{1'800'000'000, 900'000'000}));
  EXPECT_EQ(s.unattributed, 900'000'000);
  EXPECT_EQ(s.idle, 0);
}

TEST(SplitDeviceHour, ComputeWithZeroBusyIsAllIdle) {
  DeviceHour d;
  d.price_nanos = 2 * kDollar;
  d.metered_us = kHour;
  d.idle_us = kHour;
  std::vector<UsageRow> usage = {Row(kHour / 2), Row(kHour / 2)};
  auto c = SplitDeviceHour(d, usage, Compute(), kKeep);
  EXPECT_EQ(c.consumers, (std::vector<Nanos>{0, 0}));
  EXPECT_EQ(c.idle, 2 * kDollar);

  // Even when the device reports no idle time either.
  d.idle_us = 0;
  c = SplitDeviceHour(d, usage, Compute(), kKeep);
  EXPECT_EQ(c.idle, 2 * kDollar);

  // Share: no consumer has compute weight, so the allocation weights decide (1:1).
  c = SplitDeviceHour(d, usage, Compute(), kShare);
  EXPECT_EQ(c.consumers, (std::vector<Nanos>{kDollar, kDollar}));
  EXPECT_EQ(c.idle, 0);
}

TEST(SplitDeviceHour, ShareWithoutAnyWeightStaysIdle) {
  DeviceHour d;
  d.price_nanos = 5 * kDollar;
  d.metered_us = kHour;
  d.idle_us = kHour;
  d.unallocated_us = kHour;
  std::vector<UsageRow> usage = {Row(0), Row(0)};
  auto c = SplitDeviceHour(d, usage, Compute(), kShare);
  EXPECT_EQ(c.consumers, (std::vector<Nanos>{0, 0}));
  EXPECT_EQ(c.idle, 5 * kDollar);
  // No consumer at all.
  c = SplitDeviceHour(d, std::span<const UsageRow>{}, Allocation(), kShare);
  EXPECT_TRUE(c.consumers.empty());
  EXPECT_EQ(c.idle, 5 * kDollar);
}

TEST(SplitDeviceHour, Memory) {
  DeviceHour d;
  d.price_nanos = kDollar;
  d.metered_us = 1000 * kSec;
  d.memory_total_bytes = 100 * 1024;    // capacity 100'000 KiB-s
  d.unattributed_memory_kib_s = 5'000;  // 5%
  std::vector<UsageRow> usage = {Row(500, 0, 50'000), Row(500, 0, 25'000)};  // 50%, 25%
  auto c = SplitDeviceHour(d, usage, Memory(), kKeep);
  EXPECT_EQ(c.consumers, (std::vector<Nanos>{500'000'000, 250'000'000}));
  EXPECT_EQ(c.unattributed, 50'000'000);
  EXPECT_EQ(c.idle, 200'000'000);  // the unused 20%

  // Idle 2:1: 133'333'333.33 and 66'666'666.67; the larger remainder gets the leftover nano.
  auto s = SplitDeviceHour(d, usage, Memory(), kShare);
  EXPECT_EQ(s.consumers, (std::vector<Nanos>{633'333'333, 316'666'667}));
  EXPECT_EQ(s.unattributed, 50'000'000);
  EXPECT_EQ(s.idle, 0);
}

TEST(SplitDeviceHour, MemoryRealisticMagnitudes) {
  // 80 GiB for an hour is 3.0e11 KiB-s (3.1e20 byte-µs, which would not fit in int64).
  DeviceHour d;
  d.price_nanos = 6'880'000'000;
  d.metered_us = kHour;
  d.memory_total_bytes = 80 * kGiB;
  const KibSeconds full = 80LL * 1024 * 1024 * 3600;
  EXPECT_EQ(MemoryCapacityKibSeconds(d.memory_total_bytes, d.metered_us), full);
  std::vector<UsageRow> usage = {Row(kHour, 0, full / 2), Row(0, 0, full / 4)};
  auto c = SplitDeviceHour(d, usage, Memory(), kKeep);
  EXPECT_EQ(c.consumers, (std::vector<Nanos>{3'440'000'000, 1'720'000'000}));
  EXPECT_EQ(c.idle, 1'720'000'000);
}

TEST(SplitDeviceHour, HybridHalf) {
  DeviceHour d;
  d.price_nanos = 4 * kDollar;
  d.metered_us = kHour;
  d.unallocated_us = 900 * kSec;
  d.busy_us = 1800 * kSec;
  d.idle_us = 1800 * kSec;
  std::vector<UsageRow> usage = {Row(1800 * kSec, 900 * kSec), Row(900 * kSec, 900 * kSec)};
  // Allocation half ($2): 1800:900:900 -> 1.00, 0.50, idle 0.50.
  // Compute half ($2):   900:900:1800 (idle) -> 0.50, 0.50, idle 1.00.
  auto c = SplitDeviceHour(d, usage, Hybrid(500), kKeep);
  EXPECT_EQ(c.consumers, (std::vector<Nanos>{1'500'000'000, 1'000'000'000}));
  EXPECT_EQ(c.idle, 1'500'000'000);
  EXPECT_EQ(c.unattributed, 0);
}

TEST(SplitDeviceHour, HybridRoundsTheAllocationPartHalfUp) {
  DeviceHour d;
  d.price_nanos = 3;  // alpha 0.5: allocation part round(1.5) = 2, compute part 1
  d.metered_us = kHour;
  d.busy_us = kHour;
  std::vector<UsageRow> usage = {Row(kHour, 0), Row(0, kHour)};
  auto c = SplitDeviceHour(d, usage, Hybrid(500), kKeep);
  EXPECT_EQ(c.consumers, (std::vector<Nanos>{2, 1}));
  // alpha 1 is pure allocation, alpha 0 pure compute.
  EXPECT_EQ(SplitDeviceHour(d, usage, Hybrid(1000), kKeep).consumers, (std::vector<Nanos>{3, 0}));
  EXPECT_EQ(SplitDeviceHour(d, usage, Hybrid(0), kKeep).consumers, (std::vector<Nanos>{0, 3}));
}

TEST(SplitDeviceHour, NegativeAndExtremeInputsAreClampedAndConserve) {
  DeviceHour d;
  d.price_nanos = kDollar;
  d.metered_us = kHour;
  d.memory_total_bytes = -5;
  d.unallocated_us = -kHour;
  d.idle_us = -1;
  d.unattributed_memory_kib_s = -7;
  std::vector<UsageRow> usage = {Row(-kHour, -5, std::numeric_limits<KibSeconds>::min()),
                                 Row(kHour, kHour, std::numeric_limits<KibSeconds>::max())};
  for (Policy p : {Allocation(), Compute(), Memory(), Hybrid(300)}) {
    for (const IdleHandling& h : {kKeep, kShare, kPlatform}) {
      auto c = SplitDeviceHour(d, usage, p, h);
      EXPECT_EQ(Sum(c), kDollar) << ToString(p) << " " << ToString(h);
      for (Nanos n : c.consumers) EXPECT_GE(n, 0);
      EXPECT_GE(c.idle, 0);
      EXPECT_GE(c.unattributed, 0);
    }
  }
  auto c = SplitDeviceHour(d, usage, Allocation(), kKeep);
  EXPECT_EQ(c.consumers, (std::vector<Nanos>{0, kDollar}));
}

TEST(SplitDeviceHour, NegativePriceIsSplitAsACredit) {
  DeviceHour d = TimeSliced();
  d.price_nanos = -4 * kDollar;
  std::vector<UsageRow> usage = {Row(kHour / 4), Row(kHour / 4), Row(kHour / 4)};
  auto c = SplitDeviceHour(d, usage, Allocation(), kKeep);
  EXPECT_EQ(c.consumers, (std::vector<Nanos>{-kDollar, -kDollar, -kDollar}));
  EXPECT_EQ(c.idle, -kDollar);
  d.price_nanos = std::numeric_limits<Nanos>::min();
  EXPECT_EQ(Sum(SplitDeviceHour(d, usage, Hybrid(123), kShare)), d.price_nanos);
}

// Conservation over random device-hours, every policy and idle handling.
TEST(SplitDeviceHour, PropertyConservesMoneyExactly) {
  std::mt19937_64 rng(20260720);
  auto uniform = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  const Policy policies[] = {Allocation(), Compute(),   Memory(),   Hybrid(0),
                             Hybrid(1000), Hybrid(700), Hybrid(333)};
  const IdleHandling handlings[] = {kKeep, kShare, kPlatform};
  int checked = 0;
  for (int iter = 0; iter < 10'000; ++iter) {
    DeviceHour d;
    int kind = static_cast<int>(uniform(0, 9));
    d.price_nanos = kind == 0   ? 0
                    : kind == 1 ? uniform(0, 10)
                    : kind == 2 ? uniform(0, std::numeric_limits<Nanos>::max())
                                : uniform(0, 200 * kDollar);
    d.metered_us = uniform(0, kHour);
    d.busy_us = uniform(0, d.metered_us);
    d.idle_us = d.metered_us - d.busy_us;
    d.unattributed_us = uniform(0, d.busy_us);
    d.memory_total_bytes = uniform(0, 141 * kGiB);
    d.unattributed_memory_kib_s = uniform(0, 1'000'000'000) * (uniform(0, 20) == 0 ? -1 : 1);
    int n = static_cast<int>(uniform(0, 8));
    std::vector<UsageRow> usage;
    GpuMicros left = d.metered_us;
    GpuMicros busy_left = d.busy_us - d.unattributed_us;
    for (int i = 0; i < n; ++i) {
      GpuMicros a = uniform(0, left);
      left -= a;
      GpuMicros cu = uniform(0, busy_left);
      busy_left -= cu;
      KibSeconds mem = uniform(0, 100'000'000);
      if (uniform(0, 50) == 0) mem = std::numeric_limits<KibSeconds>::max();
      if (uniform(0, 50) == 0) a = -a;
      usage.push_back(Row(a, cu, mem));
    }
    d.unallocated_us = left;
    // Electricity (on-prem): a part of the price split by measured energy; sometimes a bad row
    // (more than the price, negative), which must still conserve.
    int energy_kind = static_cast<int>(uniform(0, 9));
    if (energy_kind >= 3) {
      d.energy_price_nanos = energy_kind == 3   ? d.price_nanos
                             : energy_kind == 4 ? d.price_nanos + uniform(1, 1000)
                             : energy_kind == 5 ? -uniform(1, 1000)
                                                : uniform(0, d.price_nanos);
      d.idle_energy_mj = uniform(0, 3'000'000'000);
      d.unattributed_energy_mj = uniform(0, 9) == 0 ? -5 : uniform(0, 1'000'000'000);
      for (auto& r : usage) r.energy_mj = uniform(0, 9) == 0 ? 0 : uniform(0, 2'000'000'000);
    }
    for (const Policy& p : policies) {
      for (const IdleHandling& h : handlings) {
        auto c = SplitDeviceHour(d, usage, p, h);
        ASSERT_EQ(c.consumers.size(), usage.size());
        __int128 sum = static_cast<__int128>(c.idle) + c.unattributed;
        for (Nanos x : c.consumers) {
          ASSERT_GE(x, 0) << iter;
          sum += x;
        }
        ASSERT_GE(c.idle, 0) << iter;
        ASSERT_GE(c.unattributed, 0) << iter;
        ASSERT_EQ(sum, static_cast<__int128>(d.price_nanos)) << iter << " " << ToString(p);
        if (h.kind == IdleHandling::Kind::kShare && !usage.empty() && c.idle != 0) {
          // Idle survives sharing only when no consumer has any weight.
          bool any = false;
          for (const auto& r : usage) any = any || r.allocated_us > 0;
          ASSERT_FALSE(any) << iter << " " << ToString(p);
        }
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 10'000 * 7 * 3);
}

// The worked example of docs/pricing.md: an H100 at $6.88/h, 4 time-slicing replicas.
TEST(SplitDeviceHour, DocsWorkedExample) {
  DeviceHour d;
  d.price_nanos = 6'880'000'000;
  d.metered_us = kHour;
  d.unallocated_us = 900 * kSec;
  d.busy_us = 2520 * kSec;
  d.unattributed_us = 360 * kSec;
  d.idle_us = 1080 * kSec;
  d.memory_total_bytes = 80 * kGiB;
  const KibSeconds gib_hour = 1024LL * 1024 * 3600;
  std::vector<UsageRow> usage = {Row(1800 * kSec, 1440 * kSec, 32 * gib_hour),
                                 Row(900 * kSec, 720 * kSec, 16 * gib_hour)};
  struct Want {
    Policy policy;
    IdleHandling idle;
    std::vector<Nanos> consumers;
    Nanos unattributed;
    Nanos idle_nanos;
  };
  const Want wants[] = {
      {Allocation(), kKeep, {3'440'000'000, 1'720'000'000}, 0, 1'720'000'000},
      {Allocation(), kShare, {4'586'666'667, 2'293'333'333}, 0, 0},
      {Compute(), kKeep, {2'752'000'000, 1'376'000'000}, 688'000'000, 2'064'000'000},
      {Compute(), kShare, {4'128'000'000, 2'064'000'000}, 688'000'000, 0},
      {Memory(), kKeep, {2'752'000'000, 1'376'000'000}, 0, 2'752'000'000},
      {Hybrid(700), kKeep, {3'233'600'000, 1'616'800'000}, 206'400'000, 1'823'200'000},
      {Hybrid(700), kPlatform, {3'233'600'000, 1'616'800'000}, 206'400'000, 1'823'200'000},
  };
  for (const auto& w : wants) {
    auto c = SplitDeviceHour(d, usage, w.policy, w.idle);
    EXPECT_EQ(c.consumers, w.consumers) << ToString(w.policy) << " " << ToString(w.idle);
    EXPECT_EQ(c.unattributed, w.unattributed) << ToString(w.policy) << " " << ToString(w.idle);
    EXPECT_EQ(c.idle, w.idle_nanos) << ToString(w.policy) << " " << ToString(w.idle);
  }
}

TEST(MemoryCapacityKibSeconds, RoundsToNearestAndClamps) {
  EXPECT_EQ(MemoryCapacityKibSeconds(1024, kSec), 1);
  EXPECT_EQ(MemoryCapacityKibSeconds(512, kSec), 1);  // 0.5 KiB-s: half up
  EXPECT_EQ(MemoryCapacityKibSeconds(511, kSec), 0);
  EXPECT_EQ(MemoryCapacityKibSeconds(141 * kGiB, kHour), 141LL * 1024 * 1024 * 3600);
  EXPECT_EQ(MemoryCapacityKibSeconds(-1, kHour), 0);
  EXPECT_EQ(MemoryCapacityKibSeconds(kGiB, -1), 0);
  EXPECT_EQ(MemoryCapacityKibSeconds(std::numeric_limits<Bytes>::max(),
                                     std::numeric_limits<GpuMicros>::max()),
            std::numeric_limits<KibSeconds>::max());
}

// Integer weights are used as they are, up to int64's range: their sum does not overflow,
// equal holdings get equal shares and the price is conserved.
TEST(SplitDeviceHour, MemoryWeightsAreExactIntegers) {
  DeviceHour d;
  d.price_nanos = std::numeric_limits<Nanos>::max();
  d.metered_us = kHour;
  d.memory_total_bytes = 0;  // no capacity: no idle part
  std::vector<UsageRow> usage = {Row(0, 0, KibSeconds{1} << 62), Row(0, 0, KibSeconds{1} << 62),
                                 Row(0, 0, 1)};
  d.unattributed_memory_kib_s = std::numeric_limits<KibSeconds>::max();
  auto c = SplitDeviceHour(d, usage, Memory(), kShare);
  EXPECT_EQ(Sum(c), d.price_nanos);
  EXPECT_EQ(c.consumers[0], c.consumers[1]);
  EXPECT_EQ(c.idle, 0);
  EXPECT_GT(c.unattributed, c.consumers[0]);
}

TEST(PriceForMetered, PartialAndWholeHours) {
  EXPECT_EQ(PriceForMetered(6'880'000'000, kHour), 6'880'000'000);
  EXPECT_EQ(PriceForMetered(6'880'000'000, 3 * kHour), 20'640'000'000);
  EXPECT_EQ(PriceForMetered(6'880'000'000, kHour / 2), 3'440'000'000);
  EXPECT_EQ(PriceForMetered(6'880'000'000, 45 * 60 * kSec), 5'160'000'000);
  // 1 µs at $6.88/h = 1.911 nanos -> 2.
  EXPECT_EQ(PriceForMetered(6'880'000'000, 1), 2);
  // 0.5 nanos rounds half up.
  EXPECT_EQ(PriceForMetered(1, kHour / 2), 1);
  EXPECT_EQ(PriceForMetered(1, kHour / 2 - 1), 0);
  EXPECT_EQ(PriceForMetered(6'880'000'000, 0), 0);
  // A T4 at $0.978/h for 1000 s: 978e6 x 1000 / 3600 = 271'666'666.67 -> 271'666'667.
  EXPECT_EQ(PriceForMetered(978'000'000, 1000 * kSec), 271'666'667);
}

TEST(ParsePolicy, AcceptsTheDocumentedForms) {
  EXPECT_EQ(*ParsePolicy("allocation"), Allocation());
  EXPECT_EQ(*ParsePolicy("compute"), Compute());
  EXPECT_EQ(*ParsePolicy("memory"), Memory());
  EXPECT_EQ(*ParsePolicy("hybrid:0.7"), Hybrid(700));
  EXPECT_EQ(*ParsePolicy("hybrid:0"), Hybrid(0));
  EXPECT_EQ(*ParsePolicy("hybrid:1"), Hybrid(1000));
  EXPECT_EQ(*ParsePolicy("hybrid:1.000"), Hybrid(1000));
  EXPECT_EQ(*ParsePolicy("hybrid:0.125"), Hybrid(125));
  EXPECT_EQ(*ParsePolicy("hybrid:.05"), Hybrid(50));
}

TEST(ParsePolicy, ErrorsSayWhatWasExpected) {
  auto r = ParsePolicy("hybrid:2");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().message, "policy 'hybrid:2': alpha must be in [0, 1]");
  EXPECT_EQ(ParsePolicy("hybrid:1.001").error().message,
            "policy 'hybrid:1.001': alpha must be in [0, 1]");
  EXPECT_EQ(ParsePolicy("hybrid:0.1234").error().message,
            "policy 'hybrid:0.1234': alpha must have at most 3 decimals");
  EXPECT_EQ(ParsePolicy("cost").error().message,
            "policy 'cost': expected allocation, compute, memory or hybrid:<alpha in [0, 1]>");
  for (const char* bad : {"hybrid", "hybrid:", "hybrid:x", "hybrid:-0.5", "hybrid:0.",
                          "hybrid:1e-1", "Allocation", ""}) {
    EXPECT_FALSE(ParsePolicy(bad)) << bad;
  }
}

TEST(ParsePolicy, ToStringRoundTrips) {
  EXPECT_EQ(ToString(Hybrid(700)), "hybrid:0.7");
  EXPECT_EQ(ToString(Hybrid(50)), "hybrid:0.05");
  EXPECT_EQ(ToString(Hybrid(1000)), "hybrid:1");
  EXPECT_EQ(ToString(Hybrid(0)), "hybrid:0");
  for (int a = 0; a <= 1000; ++a) EXPECT_EQ(*ParsePolicy(ToString(Hybrid(a))), Hybrid(a));
  for (Policy p : {Allocation(), Compute(), Memory()}) EXPECT_EQ(*ParsePolicy(ToString(p)), p);
}

TEST(ParseIdleHandling, Forms) {
  EXPECT_EQ(*ParseIdleHandling("keep"), kKeep);
  EXPECT_EQ(*ParseIdleHandling("share"), kShare);
  EXPECT_EQ(*ParseIdleHandling("namespace:platform"), kPlatform);
  EXPECT_EQ(ToString(*ParseIdleHandling("namespace:gpu-ops-1")), "namespace:gpu-ops-1");
  EXPECT_EQ(ToString(kKeep), "keep");
  EXPECT_EQ(ToString(kShare), "share");
  for (const char* bad : {"namespace:", "namespace:Platform", "namespace:-x", "namespace:x-",
                          "namespace:a.b", "spread", "namespace"}) {
    auto r = ParseIdleHandling(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find(bad), std::string::npos) << r.error().message;
  }
  EXPECT_FALSE(ParseIdleHandling("namespace:" + std::string(64, 'a')));
  EXPECT_TRUE(ParseIdleHandling("namespace:" + std::string(63, 'a')));
}

}  // namespace
}  // namespace gpuledger::cost
