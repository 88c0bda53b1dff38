#include "common/apportion.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gpuledger
