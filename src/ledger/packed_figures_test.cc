#include "ledger/packed_figures.h"

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "ledger/packed_column.h"

namespace gpuledger::ledger {
namespace {

// Values around both widths' edges, negatives and the int64 extremes, among ordinary ones.
std::int64_t RandomFigure(std::mt19937_64& rng) {
  const std::int64_t edges[] = {0,
                                1,
                                -1,
                                (std::int64_t{1} << 32) - 1,
                                std::int64_t{1} << 32,
                                (std::int64_t{1} << 48) - 1,
                                std::int64_t{1} << 48,
                                std::numeric_limits<std::int64_t>::max(),
                                std::numeric_limits<std::int64_t>::min()};
  if (rng() % 16 == 0) return edges[rng() % std::size(edges)];
  return static_cast<std::int64_t>(rng() % 4'000'000'000);
}

UsageFigures RandomUsage(std::mt19937_64& rng) {
  UsageFigures f;
  f.weights = {RandomFigure(rng), RandomFigure(rng), RandomFigure(rng) * 1000, RandomFigure(rng)};
  f.activity = {RandomFigure(rng), RandomFigure(rng), RandomFigure(rng), RandomFigure(rng)};
  return f;
}

void ExpectSame(const UsageFigures& a, const UsageFigures& b, std::size_t i) {
  EXPECT_EQ(a.weights.allocated_us, b.weights.allocated_us) << i;
  EXPECT_EQ(a.weights.compute_us, b.weights.compute_us) << i;
  EXPECT_EQ(a.weights.memory_kib_s, b.weights.memory_kib_s) << i;
  EXPECT_EQ(a.weights.energy_mj, b.weights.energy_mj) << i;
  EXPECT_EQ(a.activity, b.activity) << i;
}

TEST(PackedColumnTest, KeepsEveryUsageFigureExactly) {
  std::mt19937_64 rng(32);
  for (int trial = 0; trial < 50; ++trial) {
    PackedColumn<PackedUsage> column;
    std::vector<UsageFigures> plain;
    const int n = static_cast<int>(rng() % 300);
    for (int i = 0; i < n; ++i) {
      plain.push_back(RandomUsage(rng));
      column.push_back(plain.back());
    }
    ASSERT_EQ(column.size(), plain.size());
    for (std::size_t i = 0; i < plain.size(); ++i) ExpectSame(column[i], plain[i], i);
    // Keeping a middle range renumbers it from 0, the records set aside included.
    const std::size_t first = plain.empty() ? 0 : rng() % plain.size();
    const std::size_t last = first + (plain.size() == first ? 0 : rng() % (plain.size() - first));
    KeepRange(column, first, last);
    KeepRange(plain, first, last);
    ASSERT_EQ(column.size(), plain.size());
    for (std::size_t i = 0; i < plain.size(); ++i) ExpectSame(column[i], plain[i], i);
    // Appending after a keep goes on exactly.
    for (int i = 0; i < 20; ++i) {
      plain.push_back(RandomUsage(rng));
      column.push_back(plain.back());
    }
    for (std::size_t i = 0; i < plain.size(); ++i) ExpectSame(column[i], plain[i], i);
  }
}

TEST(PackedColumnTest, AnHourOfFiguresTakes36Bytes) {
  PackedColumn<PackedUsage> column;
  UsageFigures hour;  // a whole H200 for an hour: every figure at its largest
  hour.weights = {3'600'000'000, 3'600'000'000, 141LL * 1024 * 1024 * 3600, 3'600'000'000};
  hour.activity = {3'600'000'000, 3'600'000'000, 3'600'000'000, 3'600'000'000};
  for (int i = 0; i < 1000; ++i) column.push_back(hour);
  EXPECT_EQ(column.bytes(), 36'000u);
  ExpectSame(column[999], hour, 999);
}

}  // namespace
}  // namespace gpuledger::ledger
