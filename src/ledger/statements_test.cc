// Closed periods (issue 38): a closed month's statement regroups, integer for integer, to the
// reports the ledger gave when it was closed; a later change of prices (a catalog change that
// re-priced the month's hours) changes the live figures and not the statement; closing again
// makes version 2 with the new figures while version 1 stays readable; in SQLite and PostgreSQL.
#include "ledger/statements.h"
#include "ledger/read_reports.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "common/time_util.h"
#include "report/window.h"
#include "store_test_env/store_test_env.h"

namespace gpuledger::ledger {
namespace {

using store::testing::MakeDevice;
using store::testing::MakeUsage;
using store::testing::StoreKind;
using store::testing::StoreKindName;

const TimeRange kNovember = *report::MonthRange("2026-11");
const Micros kDecember5 = *ParseRfc3339("2026-12-05T00:00:00Z");

// Two GPUs over a few hours of November's first and last days and of December's first: ml's
// trainer (pod label team=vision, relabelled speech on the last day) and web's server (its
// namespace labelled team=web) sharing GPU-b; each device-hour priced at `price`.
std::vector<LedgerHour> Hours(Nanos price) {
  std::vector<LedgerHour> out;
  for (Micros day : {kNovember.from_us, kNovember.to_us - kMicrosPerDay, kNovember.to_us}) {
    for (int h = 0; h < 3; ++h) {
      const Micros hour = day + h * kMicrosPerHour;
      LedgerHour a;
      a.device = MakeDevice(hour, "GPU-a");
      a.device.price_nanos = price;
      a.usage.push_back(MakeUsage(a.device, "ml", "train-0", "main", kMicrosPerHour));
      a.usage[0].consumer.owner_kind = "Job";
      a.usage[0].consumer.owner_name = "train";
      a.usage[0].consumer.labels = {
          {"team", day == kNovember.from_us ? std::string("vision") : std::string("speech")}};
      a.usage[0].compute_us = kMicrosPerHour / 2;
      a.device.busy_us = kMicrosPerHour / 2;
      a.device.idle_us = kMicrosPerHour / 2;
      out.push_back(a);
      LedgerHour b;
      b.device = MakeDevice(hour, "GPU-b");
      b.device.price_nanos = price + 1;
      b.usage.push_back(MakeUsage(b.device, "web", "api-0", "server", kMicrosPerHour / 3));
      b.usage[0].consumer.namespace_labels = {{"team", "web"}};
      b.usage.push_back(MakeUsage(b.device, "ml", "eval-0", "main", kMicrosPerHour / 4));
      b.device.unallocated_us = b.device.metered_us - kMicrosPerHour / 3 - kMicrosPerHour / 4;
      out.push_back(b);
    }
  }
  return out;
}

ReportQuery November(const char* by, const char* policy = "allocation", const char* idle = "keep") {
  ReportQuery q;
  q.window = kNovember;
  q.group_by = *report::ParseGroupBy(by);
  q.policy = *cost::ParsePolicy(policy);
  q.idle = *cost::ParseIdleHandling(idle);
  return q;
}

// The report's figures, row by row, as text: what two reports must share.
std::vector<std::string> Figures(const report::Report& r) {
  std::vector<std::string> out;
  auto line = [&](const std::string& key, const report::Figures& f) {
    out.push_back(
        fmt::format("{} alloc={} compute={} mem={} energy={} cost={} q={} rule={} "
                    "granted={} naive={}/{}",
                    key, f.allocated_gpu_us, f.compute_gpu_us, f.memory_kib_s, f.energy_mj,
                    f.cost_nanos, ToString(f.quality), f.compute_rule, f.granted_memory_kib_s,
                    f.naive_compute_gpu_us, f.naive_cost_nanos));
  };
  for (const report::Row& row : r.rows) line(row.key, row.figures);
  line("idle", r.idle);
  line("unattributed", r.unattributed);
  out.push_back(fmt::format("total {} {} {}", r.total.device_cost_nanos, r.total.metered_us,
                            r.total.device_hours));
  return out;
}

// The ledger's live report of a query, as the CLI reads it.
LiveReports LiveFrom(store::LedgerStore& store) {
  return [&store](const ReportQuery& q) -> Result<report::Report> {
    auto reports = ReadReports(store, q);
    if (!reports) return reports.error();
    return std::move(reports->front());
  };
}

class StatementsTest : public store::testing::EachStoreTest {};

TEST_P(StatementsTest, AClosedMonthKeepsItsFiguresAndClosingAgainMakesVersionTwo) {
  store::LedgerStore& store = *store_;
  ASSERT_TRUE(store.WriteHours(Hours(2'000'000'000)).ok());
  const LiveReports live_of = LiveFrom(store);
  auto ClosedReport = [&](store::LedgerStore& s, const ReportQuery& q) {
    return PeriodReport(s, q, live_of);
  };

  // Nothing closed yet: reports read the ledger.
  auto none = ClosedReport(store, November("namespace"));
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_FALSE(none->has_value());

  const CloseRequest close{"2026-11", "allocation", "namespace:web", "test-build", kDecember5};
  auto v1 = ClosePeriod(store, close);
  ASSERT_TRUE(v1.ok()) << v1.error().message;
  EXPECT_EQ(v1->version, 1);
  EXPECT_EQ(v1->policy, "allocation");
  EXPECT_EQ(v1->idle, "namespace:web");
  EXPECT_NE(v1->provenance.find("\"lowest_price_nanos\":2000000000"), std::string::npos)
      << v1->provenance;

  // Regrouped, the statement is every report of the month as the ledger gave it at closing.
  std::vector<std::vector<std::string>> at_close;
  for (const char* by : {"namespace", "label:team", "controller", "device,container", "node",
                         "namespace,label:team"}) {
    const ReportQuery q = November(by, "allocation", "namespace:web");
    auto live = ReadReports(store, q);
    ASSERT_TRUE(live.ok()) << live.error().message;
    auto closed = StatementReport(*v1, q.group_by);
    ASSERT_TRUE(closed.ok()) << closed.error().message;
    EXPECT_EQ(Figures(*closed), Figures(live->front())) << by;
    ASSERT_TRUE(!closed->statements.empty());
    EXPECT_EQ(closed->statements[0].version, 1);
    at_close.push_back(Figures(live->front()));
  }
  // The relabel inside the month stays in it: vision before, speech after.
  auto by_team = StatementReport(*v1, *report::ParseGroupBy("label:team"));
  ASSERT_TRUE(by_team.ok());
  std::map<std::string, Nanos> team_cost;
  for (const report::Row& row : by_team->rows) team_cost[row.key] = row.figures.cost_nanos;
  EXPECT_EQ(team_cost.at("vision"), 3 * 2'000'000'000LL);
  EXPECT_EQ(team_cost.at("speech"), 3 * 2'000'000'000LL);

  // A catalog change re-prices November's hours: the live figures move, the closed month not.
  ASSERT_TRUE(store.WriteHours(Hours(3'000'000'000)).ok());
  const ReportQuery q = November("namespace", "allocation", "namespace:web");
  auto live = ReadReports(store, q);
  ASSERT_TRUE(live.ok());
  EXPECT_NE(Figures(live->front()), at_close[0]);
  auto still = ClosedReport(store, q);
  ASSERT_TRUE(still.ok()) << still.error().message;
  ASSERT_TRUE(still->has_value());
  EXPECT_EQ(Figures(**still), at_close[0]);
  EXPECT_EQ((*still)->statements[0].version, 1);
  // Another policy was never closed: it reads the ledger.
  auto other = ClosedReport(store, November("namespace", "compute", "namespace:web"));
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->has_value());

  // Closing again: version 2 has the new figures; version 1 is still there, unchanged.
  auto v2 = ClosePeriod(store, close);
  ASSERT_TRUE(v2.ok()) << v2.error().message;
  EXPECT_EQ(v2->version, 2);
  auto now = ClosedReport(store, q);
  ASSERT_TRUE(now.ok() && now->has_value());
  EXPECT_EQ(Figures(**now), Figures(live->front()));
  EXPECT_EQ((*now)->statements[0].version, 2);
  auto listed = store.ReadStatements("");
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].version, 1);
  EXPECT_EQ((*listed)[1].version, 2);
  EXPECT_EQ((*listed)[0].total_cost_nanos, 6 * (2 * 2'000'000'000LL + 1));
  EXPECT_EQ((*listed)[1].total_cost_nanos, 6 * (2 * 3'000'000'000LL + 1));
  Statement first_version = (*listed)[0];
  auto body = store.ReadStatementBody(first_version);
  ASSERT_TRUE(body.ok()) << body.error().message;
  first_version.body = std::move(*body);
  auto first = StatementReport(first_version, q.group_by);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(Figures(*first), at_close[0]);
}

// Late data for a closed hour is kept in the ledger and carried, as an adjustment, into the
// first month not closed after it: the statement plus the adjustment is the ledger, key for key
// and in total, exactly; closing the next month moves the adjustment on, and closing the late
// month again settles it.
TEST_P(StatementsTest, LateDataForAClosedMonthIsAnAdjustmentInTheNextOpenMonth) {
  store::LedgerStore& store = *store_;
  std::vector<LedgerHour> hours = Hours(2'000'000'000);
  ASSERT_TRUE(store.WriteHours(hours).ok());
  const CloseRequest close{"2026-11", "allocation", "keep", "test-build", kDecember5};
  auto v1 = ClosePeriod(store, close);
  ASSERT_TRUE(v1.ok()) << v1.error().message;

  // Late data: a pod on GPU-b in a closed hour, and a device-hour of a GPU nobody had sent.
  LedgerHour late = hours[1];  // GPU-b, November's first hour
  late.usage.push_back(MakeUsage(late.device, "research", "late-0", "main", kMicrosPerHour / 6));
  late.device.unallocated_us -= kMicrosPerHour / 6;
  LedgerHour unseen;
  unseen.device = MakeDevice(kNovember.from_us + 5 * kMicrosPerHour, "GPU-c");
  unseen.device.price_nanos = 700'000'000;
  unseen.usage.push_back(MakeUsage(unseen.device, "research", "late-1", "main", kMicrosPerHour));
  ASSERT_TRUE(store.WriteHours(std::vector{late, unseen}).ok());

  const LiveReports live = LiveFrom(store);
  auto report_of = [&](const char* month) {
    ReportQuery q = November("namespace");
    q.window = *report::MonthRange(month);
    auto r = live(q);
    EXPECT_TRUE(r.ok());
    EXPECT_TRUE(AddAdjustments(store, q, live, *r).ok());
    return *r;
  };
  const report::Report december = report_of("2026-12");
  ASSERT_EQ(december.adjustments.size(), 1u);
  const report::Adjustment& a = december.adjustments[0];
  EXPECT_EQ(a.period, "2026-11");
  EXPECT_EQ(a.version, 1);
  // Its own figures are December's alone.
  ReportQuery december_query = November("namespace");
  december_query.window = *report::MonthRange("2026-12");
  EXPECT_EQ(Figures(december), Figures(*live(december_query)));

  // The statement plus the adjustment is the ledger's November, exactly.
  auto now = live(November("namespace"));
  auto then = StatementReport(*v1, *report::ParseGroupBy("namespace"));
  ASSERT_TRUE(now.ok() && then.ok());
  std::map<std::string, Nanos> sum;
  for (const report::Row& row : then->rows) sum[row.key] += row.figures.cost_nanos;
  for (const auto& [key, cost] : a.rows) sum[key] += cost;
  std::map<std::string, Nanos> want;
  for (const report::Row& row : now->rows) want[row.key] = row.figures.cost_nanos;
  EXPECT_EQ(sum, want);
  EXPECT_EQ(then->idle.cost_nanos + a.idle_cost_nanos, now->idle.cost_nanos);
  EXPECT_EQ(then->total.device_cost_nanos + a.device_cost_nanos, now->total.device_cost_nanos);
  EXPECT_EQ(a.device_cost_nanos, 700'000'000);
  // research's late pods: a sixth of GPU-b's hour (out of its idle) and GPU-c's hour.
  EXPECT_EQ(a.rows, (std::vector<std::pair<std::string, Nanos>>{
                        {"research", (2'000'000'001LL + 5) / 6 + 700'000'000}}));
  EXPECT_EQ(a.idle_cost_nanos, -((2'000'000'001LL + 5) / 6));

  // December closed too: January carries November's adjustment (December's is nothing).
  auto january_5 = *ParseRfc3339("2027-01-05T00:00:00Z");
  ASSERT_TRUE(ClosePeriod(store, {"2026-12", "allocation", "keep", "b", january_5}).ok());
  const report::Report january = report_of("2027-01");
  ASSERT_EQ(january.adjustments.size(), 2u);
  EXPECT_EQ(january.adjustments[0], a);
  EXPECT_EQ(january.adjustments[1].period, "2026-12");
  EXPECT_EQ(january.adjustments[1].device_cost_nanos, 0);
  EXPECT_TRUE(january.adjustments[1].rows.empty());
  EXPECT_TRUE(report_of("2026-12").adjustments.empty());  // December is closed: its statement

  // A quarter's report: November and December from their statements, January live, and
  // November's late data carried by January; all of it sums to the ledger's quarter, exactly.
  ReportQuery quarter = November("namespace");
  quarter.window = {kNovember.from_us, report::MonthRange("2027-01")->to_us};
  auto combined = PeriodReport(store, quarter, live);
  ASSERT_TRUE(combined.ok()) << combined.error().message;
  ASSERT_TRUE(combined->has_value());
  report::Report& q4 = **combined;
  ASSERT_TRUE(AddAdjustments(store, quarter, live, q4).ok());
  ASSERT_EQ(q4.statements.size(), 2u);
  EXPECT_EQ(q4.statements[0].period, "2026-11");
  EXPECT_EQ(q4.statements[1].period, "2026-12");
  ASSERT_EQ(q4.adjustments.size(), 2u);
  Nanos booked = q4.idle.cost_nanos + q4.unattributed.cost_nanos;
  for (const report::Row& row : q4.rows) booked += row.figures.cost_nanos;
  EXPECT_EQ(booked, q4.total.device_cost_nanos);
  for (const report::Adjustment& adjustment : q4.adjustments) {
    booked += adjustment.idle_cost_nanos + adjustment.unattributed_cost_nanos;
    for (const auto& [key, cost] : adjustment.rows) booked += cost;
  }
  auto ledger_quarter = live(quarter);
  ASSERT_TRUE(ledger_quarter.ok());
  EXPECT_EQ(booked, ledger_quarter->total.device_cost_nanos);
  EXPECT_EQ(q4.total.device_cost_nanos + a.device_cost_nanos,
            ledger_quarter->total.device_cost_nanos);
  // A window that is not whole months reads the ledger alone.
  ReportQuery ragged = quarter;
  ragged.window.to_us -= kMicrosPerHour;
  auto alone = PeriodReport(store, ragged, live);
  ASSERT_TRUE(alone.ok());
  EXPECT_FALSE(alone->has_value());

  // November closed again: version 2 books the late data; nothing is left to carry.
  ASSERT_TRUE(ClosePeriod(store, {"2026-11", "allocation", "keep", "b", january_5}).ok());
  const report::Report settled = report_of("2027-01");
  ASSERT_EQ(settled.adjustments.size(), 2u);
  EXPECT_EQ(settled.adjustments[0].version, 2);
  EXPECT_EQ(settled.adjustments[0].device_cost_nanos, 0);
  EXPECT_TRUE(settled.adjustments[0].rows.empty());
}

TEST_P(StatementsTest, OnlyAnEndedMonthCloses) {
  auto open_month = ClosePeriod(*store_, {"2026-12", "allocation", "keep", "b", kDecember5});
  ASSERT_FALSE(open_month.ok());
  EXPECT_EQ(open_month.error().message,
            "period 2026-12: the month has not ended (it ends 2027-01-01T00:00:00Z)");
  for (const char* bad : {"2026-13", "2026-1", "november", "2026-11-01"}) {
    auto refused = ClosePeriod(*store_, {bad, "allocation", "keep", "b", kDecember5});
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  }
  auto bad_policy = ClosePeriod(*store_, {"2026-11", "cheapest", "keep", "b", kDecember5});
  ASSERT_FALSE(bad_policy.ok());
  EXPECT_EQ(bad_policy.error().message.rfind("policy: ", 0), 0u) << bad_policy.error().message;
  auto listed = store_->ReadStatements("");
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty());
}

INSTANTIATE_TEST_SUITE_P(Stores, StatementsTest,
                         ::testing::Values(StoreKind::kSqlite, StoreKind::kPostgres),
                         [](const auto& info) { return StoreKindName(info.param); });

}  // namespace
}  // namespace gpuledger::ledger
