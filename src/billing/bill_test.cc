#include "billing/bill.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

#include "billing/reconciled_prices.h"

namespace gpuledger::billing {
namespace {

using ::testing::HasSubstr;

constexpr Micros kDay0 = 1'717'200'000LL * kMicrosPerSecond;  // 2024-06-01T00:00:00Z
constexpr Nanos kDollar = kNanosPerUnit;
static_assert(DayStart(kDay0) == kDay0);

DeviceHour Device(std::string node, int hour, Nanos price, std::string gpu = "GPU-a") {
  DeviceHour d;
  d.hour_us = kDay0 + hour * kMicrosPerHour;
  d.node = std::move(node);
  d.gpu = GpuUuid(std::move(gpu));
  d.price_nanos = price;
  d.metered_us = kMicrosPerHour;
  return d;
}

Nanos Sum(const std::vector<Nanos>& v) { return std::accumulate(v.begin(), v.end(), Nanos{0}); }

// Modelled 100, billed 90: every device-hour scaled by 9/10, total exactly 90.
TEST(ScaleToBill, ModelledHundredBilledNinety) {
  std::vector<DeviceHour> day = {Device("n", 0, 50 * kDollar), Device("n", 1, 30 * kDollar),
                                 Device("n", 2, 20 * kDollar)};
  std::vector<Nanos> shares = ScaleToBill(90 * kDollar, day);
  EXPECT_EQ(shares, (std::vector<Nanos>{45 * kDollar, 27 * kDollar, 18 * kDollar}));
  EXPECT_EQ(Sum(shares), 90 * kDollar);
}

// Billed 90 nanos over three equal device-hours of 100/3-ish: 90/3 = 30 divides, so take
// billed 100 nanos over 3 equal hours: 33.33.. each; the one leftover nano goes to the first
// (largest remainder, ties to the lower index): 34 + 33 + 33 = 100.
TEST(ScaleToBill, UnevenSplitIsExactByLargestRemainder) {
  std::vector<DeviceHour> day = {Device("n", 0, kDollar), Device("n", 1, kDollar),
                                 Device("n", 2, kDollar)};
  EXPECT_EQ(ScaleToBill(100, day), (std::vector<Nanos>{34, 33, 33}));
  // $90 billed over modelled $1 + $1 + $2 ($4): exact shares 22.5, 22.5, 45 dollars.
  day[2].price_nanos = 2 * kDollar;
  EXPECT_EQ(ScaleToBill(90 * kDollar, day),
            (std::vector<Nanos>{22'500'000'000, 22'500'000'000, 45 * kDollar}));
  // $1 over three equal: 333333334 + 333333333 + 333333333 nanos.
  day[2].price_nanos = kDollar;
  EXPECT_EQ(ScaleToBill(kDollar, day), (std::vector<Nanos>{333'333'334, 333'333'333, 333'333'333}));
}

TEST(ScaleToBill, ZeroModelFallsBackToMeteredTime) {
  std::vector<DeviceHour> day = {Device("n", 0, 0), Device("n", 1, 0)};
  day[1].metered_us = 3 * day[0].metered_us;
  EXPECT_EQ(ScaleToBill(100, day), (std::vector<Nanos>{25, 75}));
}

// A net credit splits as the mirror of the same charge, the most negative bill included (its
// negation has no int64: issue 35 found ScaleToBill negating it).
TEST(ScaleToBill, ACreditIsTheMirrorOfTheChargeDownToINT64MIN) {
  std::vector<DeviceHour> day = {Device("n", 0, kDollar), Device("n", 1, kDollar),
                                 Device("n", 2, kDollar)};
  EXPECT_EQ(ScaleToBill(-100, day), (std::vector<Nanos>{-34, -33, -33}));
  const std::vector<Nanos> shares = ScaleToBill(INT64_MIN, day);
  EXPECT_EQ(std::accumulate(shares.begin(), shares.end(), __int128{0}), __int128{INT64_MIN});
  for (Nanos s : shares) EXPECT_LT(s, 0);
}

TEST(ApplyReconciliations, ScalesOnlyTheReconciledNodeDay) {
  std::vector<DeviceHour> devices = {Device("a", 0, 60 * kDollar), Device("a", 5, 40 * kDollar),
                                     Device("b", 0, 10 * kDollar),   // another node
                                     Device("a", 24, 7 * kDollar)};  // the next day
  Reconciliation r;
  r.node = "a";
  r.day_us = kDay0;
  r.billed_nanos = 90 * kDollar;
  auto priced = ApplyReconciliations(devices, std::vector<Reconciliation>{r});
  EXPECT_EQ(priced[0].price_nanos, 54 * kDollar);
  EXPECT_EQ(priced[1].price_nanos, 36 * kDollar);
  EXPECT_EQ(priced[2].price_nanos, 10 * kDollar);
  EXPECT_EQ(priced[3].price_nanos, 7 * kDollar);
}

constexpr std::string_view kBill =
    "BillingCurrency,ResourceId,ResourceName,ChargePeriodStart,ChargePeriodEnd,BilledCost\n"
    "USD,node-a,\"a, the big one\",2024-06-01T00:00:00Z,2024-06-02T00:00:00Z,90.00\n"
    "USD,i-0unknown,,2024-06-01T00:00:00Z,2024-06-02T00:00:00Z,12.5\n"
    "USD,gce://proj/zone/node-b,,2024-06-01T00:00:00Z,2024-06-01T01:00:00Z,0.5\n";

TEST(ParseFocusBill, HeaderDrivenWithQuotedFields) {
  auto lines = ParseFocusBill(kBill, "bill.csv");
  ASSERT_TRUE(lines.ok()) << lines.error().message;
  ASSERT_EQ(lines->size(), 3u);
  EXPECT_EQ((*lines)[0].line, 2);
  EXPECT_EQ((*lines)[0].resource_id, "node-a");
  EXPECT_EQ((*lines)[0].resource_name, "a, the big one");
  EXPECT_EQ((*lines)[0].billed_nanos, 90 * kDollar);
  EXPECT_EQ((*lines)[0].start_us, kDay0);
  EXPECT_EQ((*lines)[0].end_us, kDay0 + kMicrosPerDay);
  EXPECT_EQ((*lines)[2].billed_nanos, 500'000'000);
}

TEST(ParseFocusBill, BadRowsNameFileLineAndColumn) {
  struct Case {
    std::string content;
    std::string want;
  };
  const std::string header = "ResourceId,ChargePeriodStart,ChargePeriodEnd,BilledCost\n";
  const Case cases[] = {
      // line 3: "node-a," is 7 characters and each date 20 + a comma, so BilledCost is at 50
      {header + "node-a,2024-06-01T00:00:00Z,2024-06-02T00:00:00Z,1\n"
                "node-a,2024-06-01T00:00:00Z,2024-06-02T00:00:00Z,abc\n",
       "bill.csv:3:50: BilledCost 'abc' is not a decimal amount"},
      {header + "node-a,yesterday,2024-06-02T00:00:00Z,1\n", "bill.csv:2:8: ChargePeriodStart"},
      {header + "node-a,2024-06-02T00:00:00Z,2024-06-01T00:00:00Z,1\n",
       "bill.csv:2:29: ChargePeriodEnd 2024-06-01T00:00:00Z is not after"},
      {header + "node-a,2024-06-01T00:00:00Z,2024-06-02T00:00:00Z\n", "bill.csv:2:"},
      {header + "\"node-a,2024-06-01T00:00:00Z,2024-06-02T00:00:00Z,1\n",
       "bill.csv:2:1: unterminated quoted field"},
      {"ResourceId,ChargePeriodStart,BilledCost\n",
       "bill.csv:1:1: missing required column "
       "ChargePeriodEnd"},
      {header + "node-a,2024-06-01T00:00:00Z,2024-06-02T00:00:00Z,1.0000000001\n",
       "bill.csv:2:50: BilledCost"},
      // Issue 29: amounts near the int64 range gave negative totals or a wrong error.
      {header + "node-a,2024-06-01T00:00:00Z,2024-06-02T00:00:00Z,9223372036.854775807\n",
       "bill.csv:2:50: BilledCost 9223372036.854775807: expected at most 1000000000 either way"},
      {header + "node-a,2024-06-01T00:00:00Z,2024-06-02T00:00:00Z,-9223372036.854775808\n",
       "bill.csv:2:50: BilledCost"},
      // Issue 29: the first of two BilledCost columns was used silently.
      {"ResourceId,ChargePeriodStart,ChargePeriodEnd,BilledCost,BilledCost\n",
       "bill.csv:1:57: column BilledCost appears twice in the header"},
  };
  for (const Case& c : cases) {
    auto lines = ParseFocusBill(c.content, "bill.csv");
    ASSERT_FALSE(lines.ok()) << c.content;
    EXPECT_EQ(lines.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(lines.error().message, HasSubstr(c.want)) << c.content;
  }
}

TEST(PlanReconciliation, MatchesNodesRecordsFactorsAndWarns) {
  auto lines = ParseFocusBill(kBill, "bill.csv");
  ASSERT_TRUE(lines.ok());
  std::vector<DeviceHour> devices = {Device("node-a", 0, 60 * kDollar),
                                     Device("node-a", 5, 40 * kDollar),
                                     Device("node-b", 0, kDollar, "GPU-b")};
  auto plan = PlanReconciliation(*lines, devices, "USD", "bill.csv", 42);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_EQ(plan->node_days.size(), 2u);
  const Reconciliation& a = plan->node_days[0];
  EXPECT_EQ(a.node, "node-a");
  EXPECT_EQ(a.day_us, kDay0);
  EXPECT_EQ(a.modelled_nanos, 100 * kDollar);
  EXPECT_EQ(a.billed_nanos, 90 * kDollar);
  EXPECT_EQ(a.factor, "9/10");
  EXPECT_EQ(a.factor_ppm, 900'000);
  EXPECT_EQ(a.bill_file, "bill.csv");
  EXPECT_EQ(a.imported_at_us, 42);
  // node-b matched by the providerID's last segment; $0.5 billed against $1 modelled.
  EXPECT_EQ(plan->node_days[1].node, "node-b");
  EXPECT_EQ(plan->node_days[1].factor, "1/2");
  ASSERT_EQ(plan->warnings.size(), 1u);
  EXPECT_EQ(plan->warnings[0].line, 3);
  EXPECT_EQ(plan->warnings[0].resource_id, "i-0unknown");
  EXPECT_EQ(plan->warnings[0].billed_nanos, 12'500'000'000);
}

TEST(PlanReconciliation, RowSpanningTwoDaysSplitsExactlyByOverlap) {
  // 10 nanos over 18:00 day 0 -> 12:00 day 1: 6 h and 12 h -> 3.33.. and 6.66..: 3 + 7.
  BillLine line;
  line.line = 2;
  line.resource_id = "n";
  line.start_us = kDay0 + 18 * kMicrosPerHour;
  line.end_us = kDay0 + 36 * kMicrosPerHour;
  line.billed_nanos = 10;
  std::vector<DeviceHour> devices = {Device("n", 20, kDollar), Device("n", 30, kDollar)};
  auto plan = PlanReconciliation(std::vector<BillLine>{line}, devices, "", "b.csv", 0);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->node_days.size(), 2u);
  EXPECT_EQ(plan->node_days[0].billed_nanos, 3);
  EXPECT_EQ(plan->node_days[1].billed_nanos, 7);
}

// Issue 58: a row of 1,000 years made a record or a warning of each of its 365,000 days (50 MB
// printed). A row longer than a year is refused naming its line; a year is still reconciled.
TEST(PlanReconciliation, ARowLongerThanAYearIsBadInput) {
  BillLine line;
  line.line = 7;
  line.resource_id = "n";
  line.start_us = kDay0;
  line.end_us = kDay0 + 1000LL * 365 * 24 * kMicrosPerHour;
  line.billed_nanos = kDollar;
  std::vector<DeviceHour> devices = {Device("n", 1, kDollar)};
  auto refused = PlanReconciliation(std::vector<BillLine>{line}, devices, "", "b.csv", 0);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(refused.error().message, HasSubstr("b.csv:7: the charge period"));
  EXPECT_THAT(refused.error().message, HasSubstr("longer than 366 days"));
  line.end_us = kDay0 + kMaxChargePeriodDays * 24 * kMicrosPerHour;
  auto year = PlanReconciliation(std::vector<BillLine>{line}, devices, "", "b.csv", 0);
  ASSERT_TRUE(year.ok()) << year.error().message;
  EXPECT_EQ(year->node_days.size(), 1u);
}

// Issue 29: on a ledger that records no currency (built by `server`), lines in two currencies
// were added up.
TEST(PlanReconciliation, OneBillIsOneCurrencyEvenWhenTheLedgerHasNone) {
  BillLine usd, eur;
  usd.line = 2;
  usd.resource_id = eur.resource_id = "n";
  usd.start_us = eur.start_us = kDay0;
  usd.end_us = eur.end_us = kDay0 + kMicrosPerDay;
  usd.billed_nanos = eur.billed_nanos = kDollar;
  usd.currency = "USD";
  usd.currency_column = eur.currency_column = 60;
  eur.line = 3;
  eur.currency = "EUR";
  std::vector<DeviceHour> devices = {Device("n", 0, kDollar)};
  auto plan = PlanReconciliation(std::vector<BillLine>{usd, eur}, devices, "", "b.csv", 0);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().message,
            "b.csv:3:60: BillingCurrency EUR differs from USD on line 2: one bill, one currency");
}

TEST(PlanReconciliation, ADaySumBeyondTheInt64RangeIsAnErrorNotAWrap) {
  std::vector<BillLine> lines(10);
  for (int i = 0; i < 10; ++i) {
    lines[i].line = i + 2;
    lines[i].resource_id = "n";
    lines[i].start_us = kDay0;
    lines[i].end_us = kDay0 + kMicrosPerDay;
    lines[i].billed_nanos = kMaxBilledLineNanos;
  }
  std::vector<DeviceHour> devices = {Device("n", 0, kDollar)};
  auto plan = PlanReconciliation(lines, devices, "", "b.csv", 0);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.error().message,
              HasSubstr("b.csv:11: node n on 2024-06-01: the day's BilledCost sums beyond"));
}

TEST(PlanReconciliation, CurrencyMismatchIsBadInput) {
  auto lines = ParseFocusBill(kBill, "bill.csv");
  ASSERT_TRUE(lines.ok());
  std::vector<DeviceHour> devices = {Device("node-a", 0, kDollar)};
  auto plan = PlanReconciliation(*lines, devices, "EUR", "bill.csv", 0);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.error().message, HasSubstr("bill.csv:2:1: BillingCurrency USD"));
}

}  // namespace
}  // namespace gpuledger::billing
