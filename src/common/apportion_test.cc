#include "common/apportion.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

namespace gpuledger {
namespace {

TEST(Apportion, ThirdsGiveTheLeftoverToTheLowestIndex) {
  std::vector<std::uint64_t> w = {1, 1, 1};
  EXPECT_EQ(Apportion(100, w), (std::vector<std::int64_t>{34, 33, 33}));
}

TEST(Apportion, LargestRemainderWins) {
  std::vector<std::uint64_t> w = {1, 2, 4};  // 10 * 1/7 = 1.43, 2.86, 5.71
  EXPECT_EQ(Apportion(10, w), (std::vector<std::int64_t>{1, 3, 6}));
}

TEST(Apportion, AllZeroWeightsGoToTheLastBucket) {
  std::vector<std::uint64_t> w = {0, 0, 0};
  EXPECT_EQ(Apportion(7, w), (std::vector<std::int64_t>{0, 0, 7}));
}

TEST(Apportion, HugeValuesDoNotOverflow) {
  std::vector<std::uint64_t> w = {~0ULL / 3, ~0ULL / 3, 1};
  auto s = Apportion(INT64_MAX, w);
  EXPECT_EQ(std::accumulate(s.begin(), s.end(), __int128{0}), __int128{INT64_MAX});
}

// A credit splits as its magnitude, mirrored; INT64_MIN, whose magnitude has no int64, too.
TEST(Apportion, NegativeTotalsMirrorTheirMagnitude) {
  std::vector<std::uint64_t> w = {1, 1, 1};
  EXPECT_EQ(Apportion(-100, w), (std::vector<std::int64_t>{-34, -33, -33}));
  std::vector<std::uint64_t> one = {5};
  EXPECT_EQ(Apportion(INT64_MIN, one), (std::vector<std::int64_t>{INT64_MIN}));
  std::vector<std::uint64_t> uneven = {~0ULL, 1};  // the large share ends at 2^63 via a leftover
  auto s = Apportion(INT64_MIN, uneven);
  EXPECT_EQ(s, (std::vector<std::int64_t>{INT64_MIN, 0}));
  std::vector<std::uint64_t> zeros = {0, 0};
  EXPECT_EQ(Apportion(INT64_MIN, zeros), (std::vector<std::int64_t>{0, INT64_MIN}));
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<std::uint64_t> r(1 + rng() % 20);
    for (auto& x : r) x = rng() % 3 == 0 ? 0 : rng();
    const auto total = static_cast<std::int64_t>(rng());
    auto pos = Apportion(total == INT64_MIN ? INT64_MAX : (total < 0 ? -total : total), r);
    auto got = Apportion(total, r);
    ASSERT_EQ(std::accumulate(got.begin(), got.end(), __int128{0}), __int128{total});
    if (total < 0 && total != INT64_MIN) {
      for (std::size_t i = 0; i < r.size(); ++i) ASSERT_EQ(got[i], -pos[i]);
    }
  }
}

TEST(Apportion, RandomSumsAreExactAndEachShareIsFloorOrCeil) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 10000; ++trial) {
    std::int64_t total = static_cast<std::int64_t>(rng() % 1'000'000'000'000ULL);
    std::vector<std::uint64_t> w(1 + rng() % 9);
    for (auto& x : w) x = rng() % 1'000'000;
    auto s = Apportion(total, w);
    std::int64_t sum = std::accumulate(s.begin(), s.end(), std::int64_t{0});
    ASSERT_EQ(sum, total);
    unsigned __int128 wsum = 0;
    for (auto x : w) wsum += x;
    if (wsum == 0) continue;
    for (std::size_t i = 0; i < w.size(); ++i) {
      auto floor = static_cast<std::int64_t>(static_cast<unsigned __int128>(total) * w[i] / wsum);
      ASSERT_TRUE(s[i] == floor || s[i] == floor + 1);
    }
  }
}

// The leftover units go where a stable sort of the remainders (descending) puts them, whether
// the weights are few (picked one by one) or many (sorted): the rule the ledger's exact
// figures were always computed by.
TEST(Apportion, LeftoversFollowTheStableSortOfRemainders) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 20000; ++trial) {
    const std::size_t n = 1 + rng() % (trial % 2 == 0 ? 6 : 80);
    std::vector<std::uint64_t> w(n);
    // Few distinct weights, so equal remainders (ties) are common.
    for (auto& x : w) x = rng() % 4 == 0 ? 0 : 1 + rng() % 5;
    const auto total = static_cast<std::int64_t>(rng() % 1000);
    unsigned __int128 wsum = 0;
    for (auto x : w) wsum += x;
    if (wsum == 0) continue;
    std::vector<std::int64_t> expected(n);
    std::vector<unsigned __int128> remainder(n);
    std::int64_t given = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const unsigned __int128 product = static_cast<unsigned __int128>(total) * w[i];
      expected[i] = static_cast<std::int64_t>(product / wsum);
      remainder[i] = product % wsum;
      given += expected[i];
    }
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return remainder[a] > remainder[b]; });
    for (std::int64_t k = 0; k < total - given; ++k) ++expected[order[static_cast<std::size_t>(k)]];
    ASSERT_EQ(Apportion(total, w), expected) << "trial " << trial;
  }
}

}  // namespace
TEST(ApportionOverHours, SplitsByTheTimeInEachHourAndSumsExactly) {
  constexpr Micros h = kMicrosPerHour;
  const auto parts = ApportionOverHours(1000, 10 * h + h / 2, 11 * h + h / 4);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].hour_us, 10 * h);
  EXPECT_EQ(parts[0].part, 667);  // 30 of the 45 minutes
  EXPECT_EQ(parts[1].hour_us, 11 * h);
  EXPECT_EQ(parts[1].part, 333);
  // Before the epoch too, and within one hour.
  const auto before = ApportionOverHours(7, -h - 10, -h + 10);
  ASSERT_EQ(before.size(), 2u);
  EXPECT_EQ(before[0].hour_us, -2 * h);
  EXPECT_EQ(before[0].part + before[1].part, 7);
  EXPECT_EQ(ApportionOverHours(5, 3 * h + 1, 3 * h + 2).size(), 1u);
  EXPECT_TRUE(ApportionOverHours(5, 3 * h, 3 * h).empty());
}

}  // namespace gpuledger
