// The billing services over a real SQLite ledger: import, idempotent re-import, atomic failure,
// and reports/exports priced at the bill.
#include "ledger/billing_reads.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "report/report.h"

namespace gpuledger::ledger {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

constexpr Micros kDay0 = 1'717'200'000LL * kMicrosPerSecond;  // 2024-06-01T00:00:00Z
constexpr Nanos kDollar = kNanosPerUnit;

class LedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gpuledger_billing_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    auto store = store::OpenSqliteLedger((dir_ / "ledger.db").string());
    ASSERT_TRUE(store.ok()) << store.error().message;
    store_ = std::move(*store);
    ASSERT_TRUE(store_->PutMeta("currency", "USD"));
    // Node a: three device-hours on day 0 priced $50, $30, $20 (modelled $100), one on day 1.
    std::vector<LedgerHour> hours;
    const Nanos prices[] = {50 * kDollar, 30 * kDollar, 20 * kDollar};
    for (int h = 0; h < 3; ++h) hours.push_back(Hour("a", h, prices[h]));
    hours.push_back(Hour("a", 24, 10 * kDollar));
    hours.push_back(Hour("b", 0, 5 * kDollar));
    ASSERT_TRUE(store_->WriteHours(hours));
  }
  void TearDown() override { fs::remove_all(dir_); }

  static LedgerHour Hour(const std::string& node, int hour, Nanos price) {
    LedgerHour h;
    h.device.hour_us = kDay0 + hour * kMicrosPerHour;
    h.device.node = node;
    h.device.gpu = GpuUuid("GPU-" + node);
    h.device.gpu_model = "H100";
    h.device.pricing_class = "on-demand";
    h.device.price_nanos = price;
    h.device.metered_us = kMicrosPerHour;
    h.device.unallocated_us = kMicrosPerHour / 2;
    UsageRow u;
    u.hour_us = h.device.hour_us;
    u.gpu = h.device.gpu;
    u.node = node;
    u.gpu_model = "H100";
    u.consumer.ref = ConsumerRef{"ml", "train-0", PodUid("u1"), "main"};
    u.consumer.owner_kind = "Job";
    u.consumer.owner_name = "train";
    u.allocated_us = kMicrosPerHour / 2;
    h.usage.push_back(u);
    return h;
  }

  Nanos DayTotal(const std::string& node, Micros from, Micros to) {
    auto devices = ReadPricedDeviceHours(*store_, {from, to});
    EXPECT_TRUE(devices.ok());
    Nanos total = 0;
    for (const DeviceHour& d : *devices)
      if (d.node == node) total += d.price_nanos;
    return total;
  }

  fs::path dir_;
  std::unique_ptr<store::LedgerStore> store_;
};

constexpr std::string_view kBill90 =
    "ResourceId,ChargePeriodStart,ChargePeriodEnd,BilledCost,BillingCurrency\n"
    "a,2024-06-01T00:00:00Z,2024-06-02T00:00:00Z,90,USD\n"
    "i-0abc,2024-06-01T00:00:00Z,2024-06-02T00:00:00Z,3.25,USD\n";

TEST_F(LedgerTest, ImportScalesTheNodeDayToTheBillExactly) {
  auto result = ImportBill(*store_, kBill90, "bill.csv", 7);
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->plan.node_days.size(), 1u);
  EXPECT_EQ(result->plan.node_days[0].factor, "9/10");
  ASSERT_EQ(result->plan.warnings.size(), 1u);  // i-0abc is no node of this ledger
  EXPECT_EQ(result->plan.warnings[0].line, 3);

  auto devices = ReadPricedDeviceHours(*store_, {kDay0, kDay0 + 2 * kMicrosPerDay});
  ASSERT_TRUE(devices.ok());
  std::vector<Nanos> prices;
  for (const DeviceHour& d : *devices) prices.push_back(d.price_nanos);
  // Day 0 of a: $50/$30/$20 x 9/10 = $45/$27/$18; b and day 1 of a as modelled.
  EXPECT_EQ(prices, (std::vector<Nanos>{45 * kDollar, 5 * kDollar, 27 * kDollar, 18 * kDollar,
                                        10 * kDollar}));
  // A window holding part of the day still sees the whole-day scaling.
  EXPECT_EQ(DayTotal("a", kDay0 + kMicrosPerHour, kDay0 + 2 * kMicrosPerHour), 27 * kDollar);

  auto report = *report::BuildReport(*devices, *store_->ReadUsage({0, INT64_MAX}),
                                     *report::ParseGroupBy("namespace"), cost::Policy{},
                                     cost::IdleHandling{}, kDay0, kDay0 + kMicrosPerDay);
  EXPECT_EQ(report.total.device_cost_nanos, 95 * kDollar);  // $90 billed + b's $5 modelled
}

TEST_F(LedgerTest, UnevenBillIsExactByLargestRemainder) {
  // $100 modelled -> 100 nanos billed: 50 + 30 + 20 nanos, exact; then 101 nanos: the extra
  // nano goes to the largest remainder (50.5 -> 51).
  std::string bill =
      "ResourceId,ChargePeriodStart,ChargePeriodEnd,BilledCost\n"
      "a,2024-06-01T00:00:00Z,2024-06-02T00:00:00Z,0.000000101\n";
  ASSERT_TRUE(ImportBill(*store_, bill, "b.csv", 0).ok());
  auto devices = ReadPricedDeviceHours(*store_, {kDay0, kDay0 + kMicrosPerDay});
  ASSERT_TRUE(devices.ok());
  std::vector<Nanos> a;
  for (const DeviceHour& d : *devices)
    if (d.node == "a") a.push_back(d.price_nanos);
  EXPECT_EQ(a, (std::vector<Nanos>{51, 30, 20}));
}

TEST_F(LedgerTest, ReimportIsIdempotentAndALaterBillReplaces) {
  ASSERT_TRUE(ImportBill(*store_, kBill90, "bill.csv", 1).ok());
  ASSERT_TRUE(ImportBill(*store_, kBill90, "bill.csv", 2).ok());
  auto recs = store_->ReadReconciliations({0, INT64_MAX});
  ASSERT_TRUE(recs.ok());
  ASSERT_EQ(recs->size(), 1u);
  EXPECT_EQ((*recs)[0].billed_nanos, 90 * kDollar);
  EXPECT_EQ((*recs)[0].modelled_nanos, 100 * kDollar);  // the model, not the last scaling
  EXPECT_EQ(DayTotal("a", kDay0, kDay0 + kMicrosPerDay), 90 * kDollar);

  std::string corrected =
      "ResourceId,ChargePeriodStart,ChargePeriodEnd,BilledCost\n"
      "a,2024-06-01T00:00:00Z,2024-06-02T00:00:00Z,80\n";
  ASSERT_TRUE(ImportBill(*store_, corrected, "bill2.csv", 3).ok());
  recs = store_->ReadReconciliations({0, INT64_MAX});
  ASSERT_EQ(recs->size(), 1u);
  EXPECT_EQ((*recs)[0].billed_nanos, 80 * kDollar);
  EXPECT_EQ((*recs)[0].bill_file, "bill2.csv");
  EXPECT_EQ(DayTotal("a", kDay0, kDay0 + kMicrosPerDay), 80 * kDollar);
}

TEST_F(LedgerTest, BadBillWritesNothing) {
  std::string bad =
      "ResourceId,ChargePeriodStart,ChargePeriodEnd,BilledCost\n"
      "a,2024-06-01T00:00:00Z,2024-06-02T00:00:00Z,90\n"
      "b,2024-06-01T00:00:00Z,2024-06-02T00:00:00Z,ninety\n";
  auto result = ImportBill(*store_, bad, "bad.csv", 0);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(result.error().message, HasSubstr("bad.csv:3:45: BilledCost"));
  EXPECT_TRUE(store_->ReadReconciliations({0, INT64_MAX})->empty());
}

TEST_F(LedgerTest, ExportBillsOnlyReconciledNodeDays) {
  ExportOptions o;
  o.window = "2024-06-01T00:00:00Z,2024-06-02T00:00:00Z";
  ledger::ReadService reads;
  auto before = ExportFromStore(*store_, reads, o);
  ASSERT_TRUE(before.ok()) << before.error().message;
  ASSERT_TRUE(ImportBill(*store_, kBill90, "bill.csv", 1).ok());
  o.format = "csv";
  auto after = ExportFromStore(*store_, reads, o);
  ASSERT_TRUE(after.ok());
  // Plain CSV: the billed column of a's rows sums to $90, b's stays 0.
  EXPECT_THAT(*after, HasSubstr(",a,H100,exclusive,on-demand,,ml/Job/train,5400000000,"
                                "45000000000,50000000000,45000000000,9/10"));
  EXPECT_THAT(*after, HasSubstr(",b,H100,exclusive,on-demand,,ml/Job/train,1800000000,"
                                "2500000000,2500000000,0,"));
  // Past a size: refused, naming the window and what to do instead.
  auto limited = ExportFromStore(*store_, reads, o, after->size() - 1);
  ASSERT_FALSE(limited.ok());
  EXPECT_EQ(limited.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(limited.error().message,
              HasSubstr("window: the export of 2024-06-01T00:00:00Z to 2024-06-02T00:00:00Z "
                        "passes " +
                        std::to_string(after->size() - 1) + " bytes"));
  EXPECT_EQ(*ExportFromStore(*store_, reads, o, after->size()), *after);
  o.format = "xml";
  EXPECT_EQ(ExportFromStore(*store_, reads, o).error().code, ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpuledger::ledger
