#include "sources/kerneltime/busy_union.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

namespace gpuledger::kerneltime {
namespace {

using Interval = std::pair<std::uint64_t, std::uint64_t>;

// The union's length by sorting: the independent answer.
std::uint64_t UnionLength(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::uint64_t total = 0, lo = 0, hi = 0;
  bool open = false;
  for (auto [s, e] : v) {
    if (e <= s) continue;
    if (!open || s > hi) {
      if (open) total += hi - lo;
      lo = s, hi = e, open = true;
    } else {
      hi = std::max(hi, e);
    }
  }
  return open ? total + hi - lo : total;
}

TEST(BusyUnion, DisjointKernelsSumAndOverlapsCountOnce) {
  BusyUnion u;
  u.Add(0, 10);
  u.Add(20, 25);
  EXPECT_EQ(u.busy_ns(), 15u);
  u.Add(5, 22);  // bridges both
  EXPECT_EQ(u.busy_ns(), 25u);
  u.Add(1, 2);    // inside
  u.Add(25, 30);  // touching: one interval
  EXPECT_EQ(u.busy_ns(), 30u);
  EXPECT_EQ(u.open_intervals(), 1u);
  u.Add(40, 40);  // empty
  u.Add(50, 45);  // reversed
  EXPECT_EQ(u.busy_ns(), 30u);
  EXPECT_EQ(u.kernels(), 5u);
}

// Property: on random kernels from several concurrent streams, in any arrival order, the union
// equals the sorted union, is at most the wall span, equals the sum of durations when they are
// disjoint, and never decreases.
TEST(BusyUnion, RandomKernelsInAnyOrderGiveTheSortedUnion) {
  std::mt19937_64 rng(31);
  for (int trial = 0; trial < 300; ++trial) {
    const int streams = 1 + static_cast<int>(rng() % 4);
    std::vector<Interval> kernels;
    for (int s = 0; s < streams; ++s) {
      std::uint64_t t = rng() % 1000;
      for (int k = 0; k < 40; ++k) {
        t += rng() % 200;  // a gap, maybe none
        const std::uint64_t d = 1 + rng() % 300;
        kernels.emplace_back(t, t + d);
        t += d;
      }
    }
    std::shuffle(kernels.begin(), kernels.end(), rng);
    BusyUnion u;
    std::uint64_t last = 0;
    for (auto [s, e] : kernels) {
      u.Add(s, e);
      EXPECT_GE(u.busy_ns(), last);
      last = u.busy_ns();
    }
    EXPECT_EQ(u.busy_ns(), UnionLength(kernels)) << "trial " << trial;
    std::uint64_t lo = UINT64_MAX, hi = 0, sum = 0;
    for (auto [s, e] : kernels) lo = std::min(lo, s), hi = std::max(hi, e), sum += e - s;
    EXPECT_LE(u.busy_ns(), hi - lo);
    if (streams == 1) {
      EXPECT_EQ(u.busy_ns(), sum);  // one stream: disjoint
    }
    EXPECT_EQ(u.clipped_ns(), 0u);
  }
}

TEST(BusyUnion, MemoryIsBoundedAndALateRecordIsClippedNotCountedTwice) {
  BusyUnion u(/*capacity=*/4);
  for (std::uint64_t k = 0; k < 100; ++k) u.Add(k * 10, k * 10 + 5);
  EXPECT_LE(u.open_intervals(), 4u);
  EXPECT_EQ(u.busy_ns(), 500u);
  // A record reaching back into committed time: only its part after the closed point counts.
  const std::uint64_t before = u.busy_ns();
  u.Add(0, 1000);
  EXPECT_GT(u.clipped_ns(), 0u);
  EXPECT_LE(u.busy_ns(), 1000u);
  EXPECT_GE(u.busy_ns(), before);
}

}  // namespace
}  // namespace gpuledger::kerneltime
