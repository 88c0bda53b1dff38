// The server keeps ended days summed in the background (ledger/day_rollup.h), through the real
// ServeLedger loop, HTTP listener and SQLite ledger: a report read afterwards finds every ended
// day kept and answers as the rows do.

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <thread>

#include "common/time_util.h"
#include "cost/catalog.h"
#include "ledger/day_rollup.h"
#include "ledger/read_reports.h"
#include "ledger/reports.h"
#include "ledger/rightsize.h"
#include "recommendations/rightsize_days.h"
#include "recommendations/rightsize_json.h"
#include "report/report_json.h"
#include "server/serve_ledger.h"
#include "sim/cluster_run.h"
#include "sim/scenario.h"
#include "sim/simulator.h"

namespace gpuledger::server {
namespace {

using namespace std::chrono_literals;

constexpr char kScenario[] = R"(
name: keeper
start: "2026-11-20T00:00:00Z"
duration: 60h
nodes:
  - {name: a100, gpu_model: A100-80GB, gpus: 2}
workloads:
  - {namespace: ml, name: train, node: a100, compute: {profile: constant, duty: 0.5}, memory: {bytes: 4GiB}}
  - {namespace: web, name: serve, node: a100, compute: {profile: constant, duty: 0.2}, memory: {bytes: 2GiB}}
)";

// Serves the scenario's ledger (2026-11-20 00:00 to 11-22 12:00) with the clock at `now` and
// checks that the 20th and the 21st are kept, the 22nd not.
void KeepsTheTwoEndedDaysServedAt(const char* now) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("gpuledger-keeper-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "l.db").string();
  auto writer = store::OpenSqliteLedger(path);
  ASSERT_TRUE(writer) << writer.error().message;
  auto scenario = sim::ParseScenario(kScenario, "keeper.yaml");
  ASSERT_TRUE(scenario) << scenario.error().message;
  sim::Simulator simulator(*scenario, 600 * kMicrosPerSecond);
  ASSERT_TRUE(sim::BuildLedger(simulator, **writer, cost::DefaultCatalog()).ok());

  // Rightsizing over the rows alone, before any day is kept.
  recommendations::RightsizeQuery all;
  all.window = "all";
  auto from_rows =
      ledger::ReadRightsizePlan(**writer, nullptr, all, cost::DefaultCatalog());
  ASSERT_TRUE(from_rows.ok()) << from_rows.error().message;

  ManualClock clock(*ParseRfc3339(now), 0);
  ServeLedgerOptions options;
  options.db = path;
  options.listen = "127.0.0.1:0";
  options.clock = &clock;
  std::atomic<bool> stop = false;
  std::ostringstream out;
  std::ostringstream err;
  std::thread serve([&] { EXPECT_TRUE(ServeLedger(options, stop, out, err).ok()); });

  ledger::ReportQuery q;
  q.policy = *cost::ParsePolicy("allocation");
  q.idle = *cost::ParseIdleHandling("keep");
  q.group_by = *report::ParseGroupBy("namespace");
  const std::string kind = ledger::DayRollupKind(q.policy, q.idle);
  const TimeRange days{*ParseRfc3339("2026-11-20T00:00:00Z"),
                       *ParseRfc3339("2026-11-23T00:00:00Z")};
  std::vector<Micros> kept, rightsized;
  for (int i = 0; i < 200 && (kept.size() < 2 || rightsized.size() < 2); ++i) {
    std::this_thread::sleep_for(50ms);
    auto listed = (*writer)->KeptDays(kind, days);
    ASSERT_TRUE(listed.ok()) << listed.error().message;
    kept = *listed;
    listed = (*writer)->KeptDays(recommendations::RightsizeDayKind(), days);
    ASSERT_TRUE(listed.ok()) << listed.error().message;
    rightsized = *listed;
  }
  stop = true;
  serve.join();
  EXPECT_EQ(err.str(), "");
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0], days.from_us);
  EXPECT_EQ(kept[1], days.from_us + kMicrosPerDay);

  // A report over the kept days and the day that has not ended answers as one over the rows.
  q.window = days;
  auto read = ledger::ReadReports(**writer, q);
  ASSERT_TRUE(read.ok()) << read.error().message;
  auto snapshot = ledger::Snapshot::Load(**writer, days);
  ASSERT_TRUE(snapshot.ok());
  auto rows = ledger::BuildReports(**snapshot, q);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(report::ReportToJson(read->front()), report::ReportToJson(rows->front()));
  EXPECT_EQ(read->front().total.device_hours, 2 * 60);  // two GPUs, 60 hours

  // The same days kept for rightsizing, and its plan from them the plan from rows.
  EXPECT_EQ(rightsized, kept);
  auto from_kept =
      ledger::ReadRightsizePlan(**writer, nullptr, all, cost::DefaultCatalog());
  ASSERT_TRUE(from_kept.ok()) << from_kept.error().message;
  EXPECT_EQ(recommendations::RightsizeToJson(*from_kept),
            recommendations::RightsizeToJson(*from_rows));
  writer->reset();
  std::filesystem::remove_all(dir);
}

// Served at noon on the 22nd: the 20th and the 21st have ended, the 22nd has not.
TEST(ServeLedger, KeepsTheEndedDaysSummedWhileItServes) {
  KeepsTheTwoEndedDaysServedAt("2026-11-22T12:00:00Z");
}

// Served three months later, a ledger nobody writes to any more (restored, archived): its whole
// days are kept all the same, not the last 35 days before the clock, which it does not reach.
TEST(ServeLedger, KeepsTheWholeDaysOfALedgerLastWrittenLongAgo) {
  KeepsTheTwoEndedDaysServedAt("2027-02-22T12:00:00Z");
}

}  // namespace
}  // namespace gpuledger::server
