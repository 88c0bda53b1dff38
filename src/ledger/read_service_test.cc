// The read service keeps one snapshot while the ledger does not change, loads it again when a
// write lands, and reads a window older than the kept days alone; in SQLite and PostgreSQL.
#include "ledger/read_service.h"

#include <gtest/gtest.h>

#include "store_test_env/store_test_env.h"

namespace gpuledger::ledger {
namespace {

using store::testing::Hour;
using store::testing::MakeDevice;
using store::testing::MakeTestLedger;
using store::testing::MakeUsage;
using store::testing::StoreKind;
using store::testing::StoreKindName;

LedgerHour OneHour(int hour, GpuMicros allocated_us) {
  LedgerHour h;
  h.device = MakeDevice(Hour(hour), "GPU-a");
  h.device.price_nanos = 3'600'000'000;
  h.usage.push_back(MakeUsage(h.device, "ml", "train-0", "main", allocated_us));
  h.device.unallocated_us = h.device.metered_us - allocated_us;
  return h;
}

ReportQuery ByNamespace(TimeRange window) {
  ReportQuery q;
  q.window = window;
  q.group_by = *report::ParseGroupBy("namespace");
  return q;
}

class ReadServiceTest : public ::testing::TestWithParam<StoreKind> {};

TEST_P(ReadServiceTest, KeepsTheSnapshotUntilAWriteLands) {
  std::string skip;
  auto ledger = MakeTestLedger(GetParam(), skip);
  if (!ledger) GTEST_SKIP() << skip;
  auto store = ledger->Open();
  ASSERT_TRUE(store.ok()) << store.error().message;
  store::LedgerStore& s = **store;
  auto before = s.Generation();
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(*before, 0);
  const std::vector<LedgerHour> day = {OneHour(0, kMicrosPerHour), OneHour(1, kMicrosPerHour)};
  ASSERT_TRUE(s.WriteHours(day).ok());
  EXPECT_EQ(*s.Generation(), 1);
  // Only the store moves its generation.
  EXPECT_FALSE(s.PutMeta("ledger_generation", "7").ok());
  EXPECT_FALSE(s.UpdateMeta({{"ledger_generation", "7"}}).ok());

  ReadService reads;
  auto first = reads.Reports(s, ByNamespace({Hour(0), Hour(2)}));
  ASSERT_TRUE(first.ok()) << first.error().message;
  auto again = reads.Reports(s, ByNamespace({Hour(0), Hour(2)}));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(reads.stats().cache_loads, 1);
  EXPECT_EQ(reads.stats().cache_hits, 1);
  ASSERT_EQ(again->front().rows.size(), 1u);
  EXPECT_EQ(again->front().rows[0].figures.cost_nanos, 2 * 3'600'000'000LL);

  // A write in another connection: the next report sees it.
  auto writer = ledger->Open();
  ASSERT_TRUE(writer.ok());
  const std::vector<LedgerHour> later = {OneHour(2, kMicrosPerHour / 2)};
  ASSERT_TRUE((*writer)->WriteHours(later).ok());
  auto after = reads.Reports(s, ByNamespace({Hour(0), Hour(3)}));
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(reads.stats().cache_loads, 2);
  EXPECT_EQ(after->front().rows[0].figures.cost_nanos, 2 * 3'600'000'000LL + 1'800'000'000LL);
  EXPECT_EQ(after->front().idle.cost_nanos, 1'800'000'000LL);
}

TEST_P(ReadServiceTest, ReadsAWindowOlderThanTheKeptDaysAlone) {
  std::string skip;
  auto ledger = MakeTestLedger(GetParam(), skip);
  if (!ledger) GTEST_SKIP() << skip;
  auto store = ledger->Open();
  ASSERT_TRUE(store.ok()) << store.error().message;
  const std::vector<LedgerHour> hours = {OneHour(0, kMicrosPerHour),
                                         OneHour(24 * 10, kMicrosPerHour)};
  ASSERT_TRUE((*store)->WriteHours(hours).ok());
  ReadService reads(ReadServiceOptions{.cached_days = 2});
  auto recent = reads.Reports(**store, ByNamespace({Hour(24 * 10), Hour(24 * 10 + 1)}));
  ASSERT_TRUE(recent.ok());
  auto all = reads.Reports(**store, ByNamespace({Hour(0), Hour(24 * 10 + 1)}));
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(reads.stats().cache_loads, 1);
  EXPECT_EQ(reads.stats().direct_reads, 1);
  EXPECT_EQ(all->front().total.device_hours, 2);
  EXPECT_EQ(recent->front().total.device_hours, 1);
}

INSTANTIATE_TEST_SUITE_P(Stores, ReadServiceTest,
                         ::testing::Values(StoreKind::kSqlite, StoreKind::kPostgres),
                         [](const auto& info) { return StoreKindName(info.param); });

}  // namespace
}  // namespace gpuledger::ledger
