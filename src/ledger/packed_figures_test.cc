#include "ledger/packed_figures.h"

#include <cstdint>
#include <limits>
#include <random>
#include <tuple>
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
  // Memory-time runs past 32 bits (an hour of 141 GiB is 5e11 KiB-s): drawn from 49 bits too.
  const std::int64_t memory =
      rng() % 2 == 0 ? RandomFigure(rng) : static_cast<std::int64_t>(rng() % (1ULL << 49));
  f.weights = {RandomFigure(rng), RandomFigure(rng), memory, RandomFigure(rng)};
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

DeviceFigures RandomDevice(std::mt19937_64& rng) {
  DeviceFigures f;
  f.hour_us =
      rng() % 8 == 0 ? RandomFigure(rng) : static_cast<Micros>(rng() % 500'000) * kMicrosPerHour;
  f.placement = static_cast<std::uint32_t>(rng());
  f.price_state = rng() % 2 == 0 ? PriceState::kPriced : PriceState::kUnpriced;
  for (std::int64_t* figure :
       {&f.price_nanos, &f.energy_price_nanos, &f.metered_us, &f.unmetered_us, &f.unallocated_us,
        &f.busy_us, &f.idle_us, &f.unattributed_us, &f.memory_total_bytes,
        &f.unattributed_memory_kib_s, &f.energy_mj, &f.idle_energy_mj, &f.unattributed_energy_mj,
        &f.unused_memory_kib_s})
    *figure = RandomFigure(rng);
  return f;
}

void ExpectSame(const DeviceFigures& a, const DeviceFigures& b, std::size_t i) {
  EXPECT_EQ(
      std::tie(a.hour_us, a.placement, a.price_state, a.price_nanos, a.energy_price_nanos,
               a.metered_us, a.unmetered_us, a.unallocated_us, a.busy_us, a.idle_us,
               a.unattributed_us, a.memory_total_bytes, a.unattributed_memory_kib_s, a.energy_mj,
               a.idle_energy_mj, a.unattributed_energy_mj, a.unused_memory_kib_s),
      std::tie(b.hour_us, b.placement, b.price_state, b.price_nanos, b.energy_price_nanos,
               b.metered_us, b.unmetered_us, b.unallocated_us, b.busy_us, b.idle_us,
               b.unattributed_us, b.memory_total_bytes, b.unattributed_memory_kib_s, b.energy_mj,
               b.idle_energy_mj, b.unattributed_energy_mj, b.unused_memory_kib_s))
      << i;
}

// Random records (`random(rng)`) through a column, replaced, kept in part and appended to: it
// reads back what a plain vector holds, record for record.
template <typename Packed, typename Random>
void CheckKeepsEveryRecordExactly(Random random) {
  std::mt19937_64 rng(sizeof(Packed));
  for (int trial = 0; trial < 50; ++trial) {
    PackedColumn<Packed> column;
    std::vector<typename Packed::Whole> plain;
    const int n = static_cast<int>(rng() % 300);
    for (int i = 0; i < n; ++i) {
      plain.push_back(random(rng));
      column.push_back(plain.back());
    }
    // Records replaced in any order, from narrow to set aside and back.
    for (int k = 0; k < n; ++k) {
      const std::size_t i = rng() % plain.size();
      plain[i] = random(rng);
      column.Set(i, plain[i]);
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
      plain.push_back(random(rng));
      column.push_back(plain.back());
    }
    for (std::size_t i = 0; i < plain.size(); ++i) ExpectSame(column[i], plain[i], i);
  }
}

TEST(PackedColumnTest, KeepsEveryUsageFigureExactly) {
  CheckKeepsEveryRecordExactly<PackedUsage>(RandomUsage);
}

TEST(PackedColumnTest, KeepsEveryDeviceFigureExactly) {
  CheckKeepsEveryRecordExactly<PackedDevice>(RandomDevice);
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
