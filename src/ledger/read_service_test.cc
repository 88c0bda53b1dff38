// The read service keeps one snapshot while the ledger does not change, reads again the days a
// write touched when one lands (whole when the store cannot say which), and reads a window
// older than the kept days alone; in SQLite and PostgreSQL.
#include "ledger/read_service.h"
#include "ledger/day_rollup.h"
#include "ledger/read_reports.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <future>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "report/report_json.h"
#include "store_test_env/forwarding_store.h"
#include "store_test_env/store_test_env.h"

namespace gpuledger::ledger {
namespace {

using store::testing::Hour;
using store::testing::MakeDevice;
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

// Four days of one GPU's hours, each allocated `allocated_us(hour)`.
std::vector<LedgerHour> FourDays(const std::function<GpuMicros(int hour)>& allocated_us) {
  std::vector<LedgerHour> hours;
  for (int h = 0; h < 4 * 24; ++h) hours.push_back(OneHour(h, allocated_us(h)));
  return hours;
}

ReportQuery ByNamespace(TimeRange window) {
  ReportQuery q;
  q.window = window;
  q.group_by = *report::ParseGroupBy("namespace");
  return q;
}

class ReadServiceTest : public store::testing::EachStoreTest {};

TEST_P(ReadServiceTest, KeepsTheSnapshotUntilAWriteLands) {
  store::LedgerStore& s = *store_;
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
  auto writer = ledger_->Open();
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
  ForgetfulStore store(*store_);
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
  const std::vector<LedgerHour> hours = {OneHour(0, kMicrosPerHour),
                                         OneHour(24 * 10, kMicrosPerHour)};
  ASSERT_TRUE(store_->WriteHours(hours).ok());
  ReadService reads(ReadServiceOptions{.snapshot_days = 2});
  auto recent = reads.Reports(*store_, ByNamespace({Hour(24 * 10), Hour(24 * 10 + 1)}));
  ASSERT_TRUE(recent.ok());
  auto all = reads.Reports(*store_, ByNamespace({Hour(0), Hour(24 * 10 + 1)}));
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(reads.stats().cache_loads, 1);
  EXPECT_EQ(reads.stats().direct_reads, 1);
  EXPECT_EQ(all->front().total.device_hours, 2);
  EXPECT_EQ(recent->front().total.device_hours, 1);
}

// Devices over days before the kept rows: each day summed once and held, the ledger's first
// day too when it starts mid-day (it is all the ledger holds of that day), and the answer that
// of one snapshot of the window; a window starting within a day reads that part.
TEST_P(ReadServiceTest, DevicesOverOlderDaysSumTheDaysHeld) {
  std::vector<LedgerHour> hours;
  for (int h = 5; h < 4 * 24; ++h) hours.push_back(OneHour(h, (h % 5 + 1) * 60 * kMicrosPerSecond));
  ASSERT_TRUE(store_->WriteHours(hours).ok());
  ReadService reads(ReadServiceOptions{.snapshot_days = 1});
  auto as_one_snapshot = [&](const TimeRange& window) {
    auto snapshot = Snapshot::Load(*store_, window);
    EXPECT_TRUE(snapshot.ok());
    const std::vector<DeviceSummary> want = SummarizeDevices(**snapshot, window);
    auto ours = reads.Devices(*store_, window);
    ASSERT_TRUE(ours.ok()) << ours.error().message;
    ASSERT_EQ(ours->size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ((*ours)[i].placement, want[i].placement);
      EXPECT_EQ((*ours)[i].metered_us, want[i].metered_us);
      EXPECT_EQ((*ours)[i].unallocated_us, want[i].unallocated_us);
      EXPECT_EQ((*ours)[i].cost_nanos, want[i].cost_nanos);
    }
  };
  // As a server starts: the kept rows, then each GPU's days before them. Days 0 (from hour 5)
  // to 2 ended before the open hours: held.
  ASSERT_TRUE(reads.Warm(*store_).ok());
  EXPECT_EQ(reads.stats().held_device_days, 3);
  const std::int64_t reads_before = reads.stats().direct_reads;
  as_one_snapshot({Hour(0), Hour(4 * 24)});
  EXPECT_EQ(reads.stats().direct_reads, reads_before);  // all from the held days and kept rows
  as_one_snapshot({Hour(30), Hour(4 * 24)});            // day 1 from hour 30: read
  EXPECT_EQ(reads.stats().direct_reads, reads_before + 1);
}

// Issue 38: a relabel mid-window moves only the hours after it. A pod's label changes at hour
// 2 and another namespace's at hour 2 too; a report by label over the four hours charges each
// side to the label in force, from a snapshot kept across the relabel as from a fresh one, as
// the plain report computes it, and with idle charged to the relabelled namespace (its
// platform row takes that namespace's labels of the step's last row) step by step.
TEST_P(ReadServiceTest, ARelabelMidWindowChargesEachSideToTheLabelInForce) {
  auto hours = [](int from, int to, const char* pod_team, const char* namespace_team) {
    std::vector<LedgerHour> out;
    for (int h = from; h < to; ++h) {
      LedgerHour a = OneHour(h, kMicrosPerHour);  // ml/train-0, the whole hour
      a.usage[0].consumer.labels = {{"team", pod_team}};
      out.push_back(a);
      LedgerHour b;
      b.device = MakeDevice(Hour(h), "GPU-b");
      b.device.price_nanos = 3'600'000'000;
      b.usage.push_back(MakeUsage(b.device, "infer", "asr-0", "main", kMicrosPerHour / 2));
      b.usage[0].consumer.namespace_labels = {{"team", namespace_team}};
      b.device.unallocated_us = b.device.metered_us - kMicrosPerHour / 2;
      out.push_back(b);
    }
    return out;
  };
  ASSERT_TRUE(store_->WriteHours(hours(0, 2, "vision", "asr")).ok());
  ReadService reads;
  ReportQuery by_team = ByNamespace({Hour(0), Hour(4)});
  by_team.group_by = *report::ParseGroupBy("label:team");
  ASSERT_TRUE(reads.Reports(*store_, by_team).ok());  // a snapshot kept across the relabel
  ASSERT_TRUE(store_->WriteHours(hours(2, 4, "speech", "speech-infer")).ok());

  auto got = reads.Reports(*store_, by_team);
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(reads.stats().cache_refreshes, 1);
  std::map<std::string, Nanos> cost;
  for (const report::Row& row : got->front().rows) cost[row.key] = row.figures.cost_nanos;
  const std::map<std::string, Nanos> want = {{"vision", 7'200'000'000},
                                             {"speech", 7'200'000'000},
                                             {"asr", 3'600'000'000},
                                             {"speech-infer", 3'600'000'000}};
  EXPECT_EQ(cost, want);
  EXPECT_EQ(got->front().idle.cost_nanos, 7'200'000'000);

  // The plain report over the rows as read, and a fresh snapshot, agree row for row; so do
  // they with idle charged to the relabelled namespace, over the window and hour by hour.
  const std::vector<DeviceHour> devices = store::testing::MustReadDevices(*store_);
  const std::vector<UsageRow> usage = store::testing::MustReadUsage(*store_);
  ReportQuery to_infer = by_team;
  to_infer.idle = *cost::ParseIdleHandling("namespace:infer");
  ReportQuery hourly = to_infer;
  hourly.step = kMicrosPerHour;
  for (const ReportQuery& q : {by_team, to_infer, hourly}) {
    ReadService fresh;
    auto kept = reads.Reports(*store_, q);
    auto loaded = fresh.Reports(*store_, q);
    ASSERT_TRUE(kept.ok() && loaded.ok());
    const Micros step = q.step > 0 ? q.step : q.window.to_us - q.window.from_us;
    ASSERT_EQ(kept->size(), loaded->size());
    for (std::size_t i = 0; i < kept->size(); ++i) {
      const Micros from = q.window.from_us + static_cast<Micros>(i) * step;
      auto plain = report::BuildReport(devices, usage, q.group_by, q.policy, q.idle, from,
                                       std::min(from + step, q.window.to_us));
      ASSERT_TRUE(plain.ok()) << plain.error().message;
      for (const report::Report* r : {&(*kept)[i], &(*loaded)[i]}) {
        ASSERT_EQ(r->rows.size(), plain->rows.size()) << "step " << i;
        for (std::size_t k = 0; k < r->rows.size(); ++k) {
          EXPECT_EQ(r->rows[k].key, plain->rows[k].key) << "step " << i;
          EXPECT_EQ(r->rows[k].figures.cost_nanos, plain->rows[k].figures.cost_nanos);
        }
      }
    }
  }
  auto windowed = reads.Reports(*store_, to_infer);
  ASSERT_TRUE(windowed.ok());
  std::map<std::string, Nanos> charged;
  for (const report::Row& row : windowed->front().rows) charged[row.key] = row.figures.cost_nanos;
  // The idle half of GPU-b goes to infer's platform row, under the namespace's last labels.
  EXPECT_EQ(charged.at("speech-infer"), 3'600'000'000 + 7'200'000'000);
}

// A server starting loads its snapshot (Warm); a report meanwhile whose days are kept summed
// regroups them rather than wait for the load, one whose days are not reads them a day at a
// time, and each answers as the snapshot does once it is there.
TEST_P(ReadServiceTest, AnswersFromKeptDaysWhileTheSnapshotLoads) {
  auto loader_store = ledger_->Open();
  ASSERT_TRUE(loader_store.ok()) << loader_store.error().message;
  store::LedgerStore& s = *store_;
  ASSERT_TRUE(
      s.WriteHours(FourDays([](int h) { return (h % 7 + 1) * 60 * kMicrosPerSecond; })).ok());
  const ReportQuery q = ByNamespace({Hour(0), Hour(4 * 24)});
  // A keeper (the server's) keeps the days that have ended: the last one holds open hours.
  ASSERT_TRUE(KeepDays(s, q, {Hour(0), Hour(3 * 24)}, [] { return false; }).ok());

  // The loader's first scan (the snapshot's) is held until the report below has its answer.
  class HeldScan : public store::testing::ForwardingStore {
   public:
    using ForwardingStore::ForwardingStore;
    Status Scan(const TimeRange& r, store::LedgerScan& scan) override {
      if (!scanned_.exchange(true)) {
        entered.set_value();
        released.get_future().wait();
      }
      return ForwardingStore::Scan(r, scan);
    }
    std::promise<void> entered;
    std::promise<void> released;

   private:
    std::atomic<bool> scanned_ = false;
  } held(**loader_store);
  ReadService reads;
  std::thread loader([&] { EXPECT_TRUE(reads.Warm(held).ok()); });
  held.entered.get_future().wait();
  // The kept days, held, the rest of the window read for the report alone.
  auto during = reads.Reports(s, q);
  // A policy whose days are not kept: the ledger's rows, a day at a time (and not kept: a
  // read never writes).
  ReportQuery by_compute = q;
  by_compute.policy = *cost::ParsePolicy("compute");
  auto not_kept = reads.Reports(s, by_compute);
  held.released.set_value();
  loader.join();
  ASSERT_TRUE(during.ok()) << during.error().message;
  ASSERT_TRUE(not_kept.ok()) << not_kept.error().message;
  EXPECT_EQ(reads.stats().held_day_reads, 1);
  EXPECT_EQ(reads.stats().kept_day_reads, 1);
  EXPECT_EQ(reads.stats().cache_loads, 1);

  // Then the held days again, the open hours from the loaded snapshot.
  auto after = reads.Reports(s, q);
  ASSERT_TRUE(after.ok()) << after.error().message;
  EXPECT_EQ(reads.stats().held_day_reads, 2);
  EXPECT_EQ(report::ReportToJson(during->front()), report::ReportToJson(after->front()));
  EXPECT_EQ(during->front().total.device_hours, 4 * 24);
  auto snapshot = reads.SnapshotFor(s, q.window);
  ASSERT_TRUE(snapshot.ok());
  EXPECT_EQ(report::ReportToJson(not_kept->front()),
            report::ReportToJson(BuildReports(**snapshot, by_compute)->front()));
}

// Issue 58's crash: a report whose open hours were the oldest part answer kept, and whose first
// part was new, let the open hours' answer go while it still read it (a use after free, caught
// by valgrind and ASan; the server died in std::_Hash_bytes). Windows ending at the ledger's end
// and starting at each hour of the first day keep more answers than the service holds; each
// still answers as its rows do.
TEST_P(ReadServiceTest, KeepsAPartAnswerWhileAReportReadsIt) {
  store::LedgerStore& s = *store_;
  ASSERT_TRUE(
      s.WriteHours(FourDays([](int h) { return (h % 5 + 1) * 60 * kMicrosPerSecond; })).ok());
  // A keeper keeps the days that have ended.
  ASSERT_TRUE(KeepDays(s, ByNamespace({Hour(0), Hour(4 * 24)}), {Hour(0), Hour(3 * 24)}, [] {
                return false;
              }).ok());

  ReadService reads;
  ASSERT_TRUE(reads.Warm(s).ok());
  auto whole = Snapshot::Load(s, {Hour(0), Hour(4 * 24)});
  ASSERT_TRUE(whole.ok());
  // From each hour of the first day (a new first part each) to the end (the same open hours).
  for (int start = 1; start < 24; ++start) {
    const ReportQuery q = ByNamespace({Hour(start), Hour(4 * 24)});
    auto got = reads.Reports(s, q);
    ASSERT_TRUE(got.ok()) << got.error().message;
    auto want = BuildReports(**whole, q);
    ASSERT_TRUE(want.ok());
    EXPECT_EQ(report::ReportToJson(got->front()), report::ReportToJson(want->front())) << start;
  }
  EXPECT_EQ(reads.stats().held_day_reads, 23);
}

// Issue 58: hourly steps by container over a month summed gigabytes before a byte was answered.
// A report whose sums by step and group would pass max_sum_bytes is refused before it sums,
// from a snapshot and a day at a time alike, naming the step; within it, it answers as without.
TEST_P(ReadServiceTest, AReportPastItsSumBudgetIsRefusedBeforeItSums) {
  store::LedgerStore& s = *store_;
  ASSERT_TRUE(s.WriteHours(FourDays([](int) { return 30 * 60 * kMicrosPerSecond; })).ok());
  ReportQuery q = ByNamespace({Hour(0), Hour(4 * 24)});
  q.step = kMicrosPerHour;
  auto whole = Snapshot::Load(s, q.window);
  ASSERT_TRUE(whole.ok());
  auto unlimited = BuildReports(**whole, q);
  ASSERT_TRUE(unlimited.ok());
  q.max_sum_bytes = 1000;
  for (auto refused : {BuildReports(**whole, q), ReadReports(s, q)}) {
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
    EXPECT_TRUE(refused.error().message.starts_with("step: ")) << refused.error().message;
    EXPECT_NE(refused.error().message.find("over 96 steps"), std::string::npos)
        << refused.error().message;
  }
  q.max_sum_bytes = std::size_t{64} << 20;
  for (auto within : {BuildReports(**whole, q), ReadReports(s, q)}) {
    ASSERT_TRUE(within.ok()) << within.error().message;
    ASSERT_EQ(within->size(), unlimited->size());
    for (std::size_t i = 0; i < within->size(); ++i)
      EXPECT_EQ(report::ReportToJson((*within)[i]), report::ReportToJson((*unlimited)[i]));
  }
}

// Sums the allocation of the rows each day of a window gives, and may write to the ledger
// while it reads.
class AllocationByDay final : public DayReader {
 public:
  std::function<void(int part)> on_part;  // called before each part is summed
  int begins = 0;
  GpuMicros allocated_us = 0;
  std::vector<TimeRange> parts;

  void Begin() override {
    ++begins;
    allocated_us = 0;
    parts.clear();
  }
  Status OnDay(const Snapshot& s, const TimeRange& part) override {
    if (on_part) on_part(static_cast<int>(parts.size()));
    parts.push_back(part);
    const auto [first, last] = s.DeviceRange(part.from_us, part.to_us);
    for (std::uint32_t i = s.first_usage()[first]; i < s.first_usage()[last]; ++i)
      allocated_us += s.usage().figures[i].weights.allocated_us;
    return Status::Ok();
  }
};

// A window a day at a time: the kept days from memory, the others alone; a write landing in a
// day already read alone starts the read again, one in the kept days does not need to; writes
// each time give up with a clear error.
TEST_P(ReadServiceTest, EachDayAgreesWithTheLedgerAcrossWritesMeanwhile) {
  auto writer = ledger_->Open();
  ASSERT_TRUE(writer.ok()) << writer.error().message;
  std::vector<LedgerHour> hours;
  for (int h = 0; h < 72; ++h) hours.push_back(OneHour(h, kMicrosPerHour / 2));
  ASSERT_TRUE(store_->WriteHours(hours).ok());
  const TimeRange window{Hour(0), Hour(72)};  // kHour0 is midnight: three whole days
  ReadService reads({.snapshot_days = 1});
  AllocationByDay reader;
  ASSERT_TRUE(reads.EachDay(*store_, window, reader).ok());
  EXPECT_EQ(reader.begins, 1);
  EXPECT_EQ(reader.allocated_us, 72 * kMicrosPerHour / 2);
  ASSERT_EQ(reader.parts.size(), 3u);
  EXPECT_EQ(reader.parts[0].from_us, Hour(0));
  EXPECT_EQ(reader.parts[2].to_us, Hour(72));
  EXPECT_EQ(reads.stats().direct_reads, 1);

  // Hour 70 (a kept day, read last) rewritten while day one is read: one read, the write in it.
  reader.on_part = [&](int part) {
    if (part == 0 && reader.begins == 1)
      ASSERT_TRUE((*writer)->WriteHours(std::vector{OneHour(70, kMicrosPerHour)}).ok());
  };
  reader.begins = 0;
  ASSERT_TRUE(reads.EachDay(*store_, window, reader).ok());
  EXPECT_EQ(reader.begins, 1);
  EXPECT_EQ(reader.allocated_us, 71 * kMicrosPerHour / 2 + kMicrosPerHour);

  // Hour 1 (day one, read alone) rewritten while day two is read: read again, the write in it.
  reader.on_part = [&](int part) {
    if (part == 1 && reader.begins == 1)
      ASSERT_TRUE((*writer)->WriteHours(std::vector{OneHour(1, kMicrosPerHour)}).ok());
  };
  reader.begins = 0;
  ASSERT_TRUE(reads.EachDay(*store_, window, reader).ok());
  EXPECT_EQ(reader.begins, 2);
  EXPECT_EQ(reader.allocated_us, 70 * kMicrosPerHour / 2 + 2 * kMicrosPerHour);

  // Written to each time: an error that says so, not days that disagree.
  GpuMicros allocated = kMicrosPerHour / 4;
  reader.on_part = [&](int part) {
    if (part == 1) ASSERT_TRUE((*writer)->WriteHours(std::vector{OneHour(1, allocated++)}).ok());
  };
  reader.begins = 0;
  Status s = reads.EachDay(*store_, window, reader);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(s.error().message.find("written to during each of 3 reads"), std::string::npos)
      << s.error().message;
  EXPECT_EQ(reader.begins, 3);
}

INSTANTIATE_TEST_SUITE_P(Stores, ReadServiceTest,
                         ::testing::Values(StoreKind::kSqlite, StoreKind::kPostgres),
                         [](const auto& info) { return StoreKindName(info.param); });

}  // namespace
}  // namespace gpuledger::ledger
