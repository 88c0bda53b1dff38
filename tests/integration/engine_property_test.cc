// Property test on the path that ships: random clusters (every sharing mode, pods that come
// and go, random simulator steps and scrape intervals) through simulated nodes, the real agent
// Collectors, exposition text and the server's integer engine into an SQLite ledger. Every
// device-hour must conserve exactly, allocation must equal the simulator's truth, and money
// must be conserved under every policy and idle handling. The in-memory counterpart over
// random snapshots is src/attribution/conservation_property_test.cc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <string>

#include <fmt/format.h>

#include "cost/catalog.h"
#include "report/report.h"
#include "sim/cluster_run.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "store/ledger_store.h"

namespace gpuledger {
namespace {

struct Cluster {
  std::string yaml;
  Micros step_us = 0;
  Micros collect_every_us = 0;
};

// A random scenario of 1-3 nodes and up to 8 workloads, 2-5 hours, seeded.
Cluster RandomCluster(std::mt19937_64& rng, int index) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const int hours = 2 + pick(4);
  std::string y = fmt::format(
      "name: prop-{}\nseed: {}\nstart: \"2026-11-23T00:00:00Z\"\nduration: {}h\nnodes:\n", index,
      rng() % 1000, hours);
  struct Node {
    std::string name, sharing;
  };
  std::vector<Node> nodes;
  const int node_count = 1 + pick(3);
  for (int n = 0; n < node_count; ++n) {
    static const char* const kModes[] = {"exclusive", "time-slicing", "mps",
                                         "mig",       "fractional",   "dra"};
    Node node{fmt::format("n{}", n), kModes[pick(6)]};
    std::string line = fmt::format("  - {{name: {}, gpu_model: H200-141GB, gpus: {}, sharing: {}",
                                   node.name, 1 + pick(2), node.sharing);
    if (node.sharing == "time-slicing" || node.sharing == "mps")
      line += fmt::format(", replicas: {}", 2 + pick(3));
    if (node.sharing == "mig") line += ", mig_layout: [3g.71gb, 2g.35gb, 1g.18gb, 1g.18gb]";
    y += line + "}\n";
    nodes.push_back(node);
  }
  y += "workloads:\n";
  const int workloads = 1 + pick(8);
  for (int w = 0; w < workloads; ++w) {
    const Node& node = nodes[static_cast<std::size_t>(pick(node_count))];
    std::string line = fmt::format(
        "  - {{namespace: ns{}, name: w{}, node: {}, replicas: {}, compute: {{profile: constant, "
        "duty: {:.2f}}}, memory: {{bytes: {}GiB}}",
        pick(3), w, node.name, 1 + pick(2), pick(101) / 100.0, 1 + pick(8));
    if (node.sharing == "mig") {
      static const char* const kProfiles[] = {"3g.71gb", "2g.35gb", "1g.18gb"};
      line += fmt::format(", mig_profile: {}", kProfiles[pick(3)]);
    }
    if (node.sharing == "fractional") line += fmt::format(", fraction: 0.{}", 1 + pick(5));
    // Pods that start late and end early, on and off the hour.
    const int start_min = pick(3) == 0 ? pick(hours * 60) : 0;
    const int end_min = pick(3) == 0 ? start_min + 1 + pick(hours * 60 - start_min) : hours * 60;
    line += fmt::format(", start: {}m, end: {}m}}\n", start_min, end_min);
    y += line;
  }
  static const Micros kSteps[] = {7 * kMicrosPerSecond, 60 * kMicrosPerSecond,
                                  137 * kMicrosPerSecond, 600 * kMicrosPerSecond};
  static const Micros kCollect[] = {5 * 60 * kMicrosPerSecond, 15 * 60 * kMicrosPerSecond,
                                    kMicrosPerHour};
  return Cluster{y, kSteps[pick(4)], kCollect[pick(3)]};
}

TEST(EngineProperty, RandomClustersConserveExactlyThroughTheShippingPath) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("gpuledger-engine-prop-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::mt19937_64 rng(20261203);
  const cost::Catalog catalog = cost::DefaultCatalog();
  constexpr int kClusters = 150;
  int hours_checked = 0;
  for (int i = 0; i < kClusters; ++i) {
    // Drawn again until the pods fit their nodes (the scenario parser places them).
    Cluster c = RandomCluster(rng, i);
    auto scenario = sim::ParseScenario(c.yaml, "prop.yaml");
    for (int attempt = 0; !scenario && attempt < 50; ++attempt) {
      c = RandomCluster(rng, i);
      scenario = sim::ParseScenario(c.yaml, "prop.yaml");
    }
    SCOPED_TRACE(fmt::format("cluster {} (step {} s, scrape every {} s):\n{}", i,
                             c.step_us / kMicrosPerSecond, c.collect_every_us / kMicrosPerSecond,
                             c.yaml));
    ASSERT_TRUE(scenario) << scenario.error().message;
    const std::string path = (dir / fmt::format("{}.db", i)).string();
    std::filesystem::remove(path);
    auto store = store::OpenSqliteLedger(path);
    ASSERT_TRUE(store) << store.error().message;
    sim::Simulator simulator(*scenario, c.step_us);
    sim::RunOptions options;
    options.collect_every_us = c.collect_every_us;
    auto built = sim::BuildLedger(simulator, **store, catalog, options);
    ASSERT_TRUE(built) << built.error().message;
    auto extent = (*store)->Extent();
    ASSERT_TRUE(extent);
    auto devices = (*store)->ReadDeviceHours(*extent);
    auto usage = (*store)->ReadUsage(*extent);
    ASSERT_TRUE(devices && usage);

    // Every device-hour, from the ledger's rows alone.
    std::map<std::pair<Micros, std::string>, std::vector<const UsageRow*>> rows;
    for (const UsageRow& u : *usage) rows[{u.hour_us, u.gpu.value}].push_back(&u);
    for (const DeviceHour& d : *devices) {
      SCOPED_TRACE(fmt::format("hour {} gpu {}", d.hour_us, d.gpu.value));
      EXPECT_EQ(d.metered_us + d.unmetered_us, kMicrosPerHour);
      EXPECT_EQ(d.metered_us, kMicrosPerHour) << "the agents ran the whole scenario";
      EXPECT_EQ(d.busy_us + d.idle_us, d.metered_us);
      GpuMicros allocated = d.unallocated_us, compute = d.unattributed_us;
      MilliJoules energy = d.idle_energy_mj + d.unattributed_energy_mj;
      for (const UsageRow* u : rows[{d.hour_us, d.gpu.value}]) {
        EXPECT_GE(u->allocated_us, 0);
        EXPECT_GE(u->compute_us, 0);
        allocated += u->allocated_us;
        compute += u->compute_us;
        energy += u->energy_mj;
      }
      EXPECT_EQ(allocated, d.metered_us);
      EXPECT_EQ(compute, d.busy_us);
      EXPECT_EQ(energy, d.energy_mj);
      ++hours_checked;
    }

    // Allocation per consumer equals the simulator's truth (the ledger rounds once per row).
    std::map<ConsumerRef, GpuMicros> allocated;
    std::map<ConsumerRef, int> row_count;
    for (const UsageRow& u : *usage) {
      allocated[u.consumer.ref] += u.allocated_us;
      ++row_count[u.consumer.ref];
    }
    for (const auto& [ref, truth] : simulator.truth()) {
      EXPECT_LE(std::llabs(allocated[ref] - truth.AllocatedUs()), row_count[ref] + 1)
          << ref.namespace_name << "/" << ref.pod << "/" << ref.container;
    }

    // Money: every policy and idle handling splits exactly the devices' cost.
    for (const char* policy : {"allocation", "compute", "memory", "hybrid:0.4"}) {
      for (const char* idle : {"keep", "share", "namespace:ns0"}) {
        auto r = *report::BuildReport(*devices, *usage, *report::ParseGroupBy("namespace,pod"),
                                      *cost::ParsePolicy(policy), *cost::ParseIdleHandling(idle),
                                      extent->from_us, extent->to_us);
        Nanos sum = r.idle.cost_nanos + r.unattributed.cost_nanos;
        for (const auto& row : r.rows) {
          EXPECT_GE(row.figures.cost_nanos, 0) << policy << " " << idle << " " << row.key;
          sum += row.figures.cost_nanos;
        }
        EXPECT_EQ(sum, r.total.device_cost_nanos) << policy << " " << idle;
      }
    }
    store->reset();
    std::filesystem::remove(path);
    if (HasFailure()) break;  // one cluster's trace is enough to debug
  }
  EXPECT_GT(hours_checked, kClusters * 2);
  RecordProperty("device_hours_checked", hours_checked);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpuledger
