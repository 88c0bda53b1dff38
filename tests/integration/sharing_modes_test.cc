// Scenario -> simulated nodes -> real agent Collectors -> exposition text -> ingest engine ->
// SQLite -> report (sim/cluster_run: the path that ships), for the sharing modes the core issue
// names, with the expected numbers computed here from the scenario.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <random>

#include <fmt/format.h>

#include "cost/catalog.h"
#include "report/report.h"
#include "sim/cluster_run.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "store/ledger_store.h"
#include "temp_dir.h"

namespace gpuledger {
namespace {

struct SimRun {
  std::unique_ptr<testing::TempDir> dir;  // outlives the store: members go in reverse order
  std::unique_ptr<store::LedgerStore> store;
  std::map<ConsumerRef, sim::Truth> truth;
};

SimRun Simulate(const std::string& yaml, Micros step_us = 60 * kMicrosPerSecond) {
  auto scenario = sim::ParseScenario(yaml, "test.yaml");
  EXPECT_TRUE(scenario.ok()) << scenario.error().message;
  SimRun run;
  run.dir = std::make_unique<testing::TempDir>("gpuledger-it");
  auto store = store::OpenSqliteLedger((run.dir->path() / "ledger.db").string());
  EXPECT_TRUE(store.ok());
  run.store = std::move(*store);
  sim::Simulator simulator(*scenario, step_us);
  cost::Catalog catalog = cost::DefaultCatalog();
  auto built = sim::BuildLedger(simulator, *run.store, catalog);
  EXPECT_TRUE(built.ok()) << built.error().message;
  run.truth = simulator.truth();
  return run;
}

report::Report Report(store::LedgerStore& store, const std::string& by,
                      const std::string& policy = "allocation", const std::string& idle = "keep") {
  auto extent = *store.Extent();
  auto devices = *store.ReadDeviceHours(extent);
  auto usage = *store.ReadUsage(extent);
  return *report::BuildReport(devices, usage, *report::ParseGroupBy(by), *cost::ParsePolicy(policy),
                              *cost::ParseIdleHandling(idle), extent.from_us, extent.to_us);
}

const report::Figures& Row(const report::Report& r, const std::string& key) {
  for (const auto& row : r.rows)
    if (row.key == key) return row.figures;
  ADD_FAILURE() << "no row " << key;
  static report::Figures none;
  return none;
}

constexpr char kTimeSliced[] = R"(
name: ts
start: "2026-11-23T00:00:00Z"
duration: 24h
seed: 7
nodes:
  - {name: a100, gpu_model: A100-80GB, gpus: 1, sharing: time-slicing, replicas: 4}
workloads:
  - {namespace: ml, name: p20, compute: {profile: constant, duty: 0.2}, memory: {bytes: 10GiB}}
  - {namespace: ml, name: p30, compute: {profile: constant, duty: 0.3}, memory: {bytes: 10GiB}}
  - {namespace: ml, name: p10, compute: {profile: constant, duty: 0.1}, memory: {bytes: 10GiB}}
)";

TEST(SharingModes, TimeSlicedFourReplicasThreePods) {
  SimRun run = Simulate(kTimeSliced);
  const GpuMicros day = 24 * kMicrosPerHour;
  auto r = Report(*run.store, "container");
  const std::map<std::string, double> duty = {{"p20", 0.2}, {"p30", 0.3}, {"p10", 0.1}};
  for (const auto& [name, d] : duty) {
    const auto& f = Row(r, "ml/" + name + "-0/main");
    EXPECT_EQ(f.allocated_gpu_us, day / 4) << name;
    const double truth = d * day;
    const double err = (f.compute_gpu_us - truth) / truth;
    std::printf("%s: error %+.2f%%\n", name.c_str(), 100 * err);
    // Split by per-process samples: estimated. Each sample window goes whole to one process,
    // drawn by the demand (steady here); over a day's 80,000 or more windows the draws average
    // out: a standard deviation under 0.8% for the 10% pod (a sixth of the windows), so 3%.
    EXPECT_LT(std::abs(err), 0.03) << name << " error " << 100 * err << "%";
    EXPECT_EQ(f.quality, Quality::kEstimated);
    // The per-device method gives each pod the whole device's busy time (~0.6 of the GPU).
    const double per_device_err = (static_cast<double>(f.naive_compute_gpu_us) - truth) / truth;
    EXPECT_GT(per_device_err, 0.9) << name;
    std::printf("%s: truth %.3f GPU-h, gpuledger %+.3f%%, per-device %+.0f%%\n", name.c_str(),
                truth / kMicrosPerHour, 100 * err, 100 * per_device_err);
  }
  EXPECT_EQ(r.idle.allocated_gpu_us, day / 4);
  Nanos sum = r.idle.cost_nanos + r.unattributed.cost_nanos;
  for (const auto& row : r.rows) sum += row.figures.cost_nanos;
  EXPECT_EQ(sum, r.total.device_cost_nanos);
}

TEST(SharingModes, MigThreeAndTwoSlicesLeaveTheUnmadeSlicesIdle) {
  SimRun run = Simulate(R"(
name: mig
start: "2026-11-23T00:00:00Z"
duration: 5h
nodes:
  - {name: h100, gpu_model: H100-80GB, gpus: 1, sharing: mig, mig_layout: [3g.40gb, 2g.20gb]}
workloads:
  - {namespace: a, name: big, mig_profile: 3g.40gb, compute: {profile: constant, duty: 0.5}, memory: {bytes: 20GiB}}
  - {namespace: b, name: small, mig_profile: 2g.20gb, compute: {profile: constant, duty: 0.5}, memory: {bytes: 5GiB}}
)");
  auto r = Report(*run.store, "namespace");
  const GpuMicros span = 5 * kMicrosPerHour;
  // 3/7 and 2/7 of each hour, each rounded once per hour row.
  EXPECT_NEAR(Row(r, "a").allocated_gpu_us, span * 3 / 7, 5);
  EXPECT_NEAR(Row(r, "b").allocated_gpu_us, span * 2 / 7, 5);
  EXPECT_NEAR(r.idle.allocated_gpu_us, span * 2 / 7, 5);
  EXPECT_EQ(Row(r, "a").allocated_gpu_us + Row(r, "b").allocated_gpu_us + r.idle.allocated_gpu_us,
            span);
  // Cost follows: 3/7, 2/7 and 2/7 of 5 hours of an H100.
  const Nanos hour_price = cost::DefaultCatalog().Find("H100-80GB", "on-demand")->hourly_nanos;
  EXPECT_NEAR(static_cast<double>(Row(r, "a").cost_nanos), 5.0 * hour_price * 3 / 7, 5);
  EXPECT_EQ(r.total.device_cost_nanos, 5 * hour_price);
}

TEST(SharingModes, MoneyIsConservedUnderEveryPolicyOnTheBuiltInDemo) {
  SimRun run = Simulate(std::string(sim::ExampleScenarioYaml()), 300 * kMicrosPerSecond);
  for (const char* policy : {"allocation", "compute", "memory", "hybrid:0.3", "hybrid:0.75"}) {
    for (const char* idle : {"keep", "share", "namespace:platform"}) {
      for (const char* by : {"namespace", "label:team", "controller", "device", "container"}) {
        auto r = Report(*run.store, by, policy, idle);
        Nanos sum = r.idle.cost_nanos + r.unattributed.cost_nanos;
        for (const auto& row : r.rows) {
          EXPECT_GE(row.figures.cost_nanos, 0);
          sum += row.figures.cost_nanos;
        }
        ASSERT_EQ(sum, r.total.device_cost_nanos) << policy << " " << idle << " " << by;
        ASSERT_GT(r.total.device_cost_nanos, 0);
      }
    }
  }
}

TEST(SharingModes, AllocationDoesNotDependOnTheStep) {
  SimRun coarse = Simulate(kTimeSliced, 3600 * kMicrosPerSecond);
  SimRun fine = Simulate(kTimeSliced, 7 * kMicrosPerSecond);
  auto a = Report(*coarse.store, "container");
  auto b = Report(*fine.store, "container");
  ASSERT_EQ(a.rows.size(), b.rows.size());
  for (std::size_t i = 0; i < a.rows.size(); ++i) {
    EXPECT_EQ(a.rows[i].key, b.rows[i].key);
    EXPECT_EQ(a.rows[i].figures.allocated_gpu_us, b.rows[i].figures.allocated_gpu_us);
    EXPECT_EQ(a.rows[i].figures.cost_nanos, b.rows[i].figures.cost_nanos);
  }
}

// Shaped like the H200's runs 2-4 (../shared/data/h200): three processes time-sliced on one
// H200, busy for 20%, 40% and 60% of every second, each at its own phase, for 40 s, read at 1 s.
// NVML gives each 200 ms sample window whole to the process holding the GPU as it closes, so the
// per-process split aliases against the windows by an amount that depends on the phases: on the
// real GPU the agent's split (each window shared with the previous one's owner) was off by 9% to
// 111% at worst per capture, 40% on average (docs/attribution.md). The simulator's NVML must be
// as wrong, not within 2% as a model of dense exact samples was; the device's time is still all
// given out.
TEST(SharingModes, RunTwoShapedTimeSlicesAreAsWrongAsTheRealH200) {
  std::mt19937 phases(28);  // ten phase sets, fixed
  std::uniform_int_distribution<int> ms(0, 999);
  double sum_worst = 0;
  constexpr int kRuns = 10;
  for (int run_index = 0; run_index < kRuns; ++run_index) {
    const int p40 = ms(phases), p60 = ms(phases);
    SimRun run =
        Simulate(fmt::format(R"(
name: run2-shaped
start: "2026-11-23T00:00:00Z"
duration: 45s
seed: {}
nodes:
  - {{name: h200, gpu_model: H200-141GB, gpus: 1, sharing: time-slicing, replicas: 4}}
workloads:
  - {{namespace: u, name: w20, start: 2s, end: 42s, memory: {{bytes: 8GiB}},
     compute: {{profile: periodic, period: 1s, on: 200ms}}}}
  - {{namespace: u, name: w40, start: {}ms, end: {}ms, memory: {{bytes: 16GiB}},
     compute: {{profile: periodic, period: 1s, on: 400ms}}}}
  - {{namespace: u, name: w60, start: {}ms, end: {}ms, memory: {{bytes: 24GiB}},
     compute: {{profile: periodic, period: 1s, on: 600ms}}}}
)",
                             run_index + 1, 2000 + p40, 42000 + p40, 2000 + p60, 42000 + p60),
                 kMicrosPerSecond);
    auto r = Report(*run.store, "container");
    double worst = 0, attributed = 0, truth_sum = 0;
    std::string line;
    for (const char* name : {"w20", "w40", "w60"}) {
      const auto& f = Row(r, std::string("u/") + name + "-0/main");
      double truth = 0;
      for (const auto& [ref, t] : run.truth)
        if (ref.pod == std::string(name) + "-0") truth = t.compute_gpu_us;
      ASSERT_GT(truth, 0) << name;
      const double err = (static_cast<double>(f.compute_gpu_us) - truth) / truth;
      line += fmt::format(" {:+.0f}%", 100 * err);
      worst = std::max(worst, std::abs(err));
      attributed += static_cast<double>(f.compute_gpu_us);
      truth_sum += truth;
      EXPECT_EQ(f.quality, Quality::kEstimated) << name;
    }
    std::printf("phases 0/%d/%d ms:%s\n", p40, p60, line.c_str());
    EXPECT_NEAR(attributed, truth_sum, 0.02 * truth_sum);
    sum_worst += worst;
  }
  const double mean_worst = sum_worst / kRuns;
  std::printf("mean worst error %.0f%% (real H200: 40%%)\n", 100 * mean_worst);
  EXPECT_GT(mean_worst, 0.2);
  EXPECT_LT(mean_worst, 0.8);
}

}  // namespace
}  // namespace gpuledger
