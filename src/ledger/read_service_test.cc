// The read service keeps one snapshot while the ledger does not change, reads again the days a
// write touched when one lands (whole when the store cannot say which), and reads a window
// older than the kept days alone; in SQLite and PostgreSQL.
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
  EXPECT_EQ(reads.stats().cache_loads, 1);
  EXPECT_EQ(reads.stats().cache_refreshes, 1);
  EXPECT_EQ(after->front().rows[0].figures.cost_nanos, 2 * 3'600'000'000LL + 1'800'000'000LL);
  EXPECT_EQ(after->front().idle.cost_nanos, 1'800'000'000LL);
}

// A store that cannot say what changed (a reader further behind than its change log): the
// kept snapshot is read whole again, and the answer is the ledger's now.
class ForgetfulStore : public store::LedgerStore {
 public:
  explicit ForgetfulStore(store::LedgerStore& real) : real_(real) {}
  Status WriteHours(std::span<const LedgerHour> hours) override { return real_.WriteHours(hours); }
  Result<std::vector<DeviceHour>> ReadDeviceHours(const TimeRange& range) override {
    return real_.ReadDeviceHours(range);
  }
  Result<std::vector<UsageRow>> ReadUsage(const TimeRange& range) override {
    return real_.ReadUsage(range);
  }
  Status Scan(const TimeRange& range, store::LedgerScan& scan) override {
    return real_.Scan(range, scan);
  }
  Result<std::int64_t> Generation() override { return real_.Generation(); }
  Result<TimeRange> Extent() override { return real_.Extent(); }
  Status PutMeta(const std::string& key, const std::string& value) override {
    return real_.PutMeta(key, value);
  }
  Result<std::map<std::string, std::string>> ReadMeta() override { return real_.ReadMeta(); }
  Status UpdateMeta(const std::map<std::string, std::optional<std::string>>& changes) override {
    return real_.UpdateMeta(changes);
  }

 private:
  store::LedgerStore& real_;
};

TEST_P(ReadServiceTest, ReadsWholeWhenTheStoreCannotSayWhatChanged) {
  std::string skip;
  auto ledger = MakeTestLedger(GetParam(), skip);
  if (!ledger) GTEST_SKIP() << skip;
  auto opened = ledger->Open();
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  ForgetfulStore store(**opened);
  const std::vector<LedgerHour> first = {OneHour(0, kMicrosPerHour)};
  ASSERT_TRUE(store.WriteHours(first).ok());
  ReadService reads;
  ASSERT_TRUE(reads.Reports(store, ByNamespace({Hour(0), Hour(2)})).ok());
  const std::vector<LedgerHour> second = {OneHour(0, kMicrosPerHour / 4)};
  ASSERT_TRUE(store.WriteHours(second).ok());
  auto after = reads.Reports(store, ByNamespace({Hour(0), Hour(2)}));
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(reads.stats().cache_loads, 2);
  EXPECT_EQ(reads.stats().cache_refreshes, 0);
  EXPECT_EQ(after->front().rows[0].figures.cost_nanos, 900'000'000LL);
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
