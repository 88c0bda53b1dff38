#include "sim/alibaba_import.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "sim/scenario.h"
#include "sim/simulator.h"
#include "test_paths.h"

namespace gpuledger::sim {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ImportAlibabaTrace, MalformedCellNamesFileLineColumn) {
  auto r = ImportAlibabaTrace(
      "name,num_gpu,gpu_milli,gpu_spec,qos,deletion_time,scheduled_time\n"
      "p0,1,1000,,LS,100,0\np1,x,1000,,LS,100,0\n",
      "pods.csv", "sn,gpu,model\nn0,2,T4\n", "nodes.csv");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "pods.csv:3: column 'num_gpu': expected a non-negative integer, got 'x'");
  auto r2 = ImportAlibabaTrace("name,num_gpu\n", "pods.csv", "sn,gpu,model\n", "nodes.csv");
  ASSERT_FALSE(r2.ok());
  EXPECT_THAT(r2.error().message, ::testing::HasSubstr("pods.csv:1: column 'gpu_milli'"));
}

TEST(ImportAlibabaTrace, FirstFitSharingAndOverflow) {
  auto yaml = ImportAlibabaTrace(
      "name,num_gpu,gpu_milli,gpu_spec,qos,deletion_time,scheduled_time\n"
      "a,1,600,,LS,7200,0\n"
      "b,1,400,,BE,7200,10\n"   // shares GPU 0 with a
      "c,1,500,,BE,3600,20\n"   // GPU 1
      "d,2,1000,,LS,5000,30\n"  // no two whole GPUs free: overflow node
      "e,1,1000,,LS,,\n"        // never scheduled: skipped
      "f,0,0,,LS,100,0\n",      // no GPU: skipped
      "pods.csv", "sn,gpu,model\nn0,2,T4\nn1,0,T4\nn2,1,P100\n", "nodes.csv");
  ASSERT_TRUE(yaml.ok()) << yaml.error().message;
  auto sc = ParseScenario(*yaml, "import.yaml");
  ASSERT_TRUE(sc.ok()) << sc.error().message << "\n" << *yaml;
  // n0 and the overflow node; n2 (one P100) cannot take d, which needs two GPUs.
  ASSERT_EQ(sc->nodes.size(), 2u) << *yaml;
  EXPECT_EQ(sc->nodes[1].name, "overflow-0");
  EXPECT_EQ(sc->nodes[1].labels.at("overflow"), "true");
  EXPECT_EQ(sc->workloads.size(), 4u);
  EXPECT_EQ(sc->workloads[1].placement_gpus, std::vector<int>{0});
  EXPECT_EQ(sc->workloads[2].placement_gpus, std::vector<int>{1});
  EXPECT_EQ(sc->duration_us, 2 * kMicrosPerHour);
}

// Replays the real trace and checks the metered allocation per namespace against the CSV.
TEST(ImportAlibabaTrace, ReplayConservesAllocation) {
  std::string dir = std::string(gpuledger::test_paths::kSharedData) + "/alibaba-gpu-v2023";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "shared data folder missing: " << dir;
  std::string pods = Slurp(dir + "/openb_pod_list_default.csv");
  std::string nodes = Slurp(dir + "/openb_node_list_gpu_node.csv");
  auto yaml =
      ImportAlibabaTrace(pods, "openb_pod_list_default.csv", nodes, "openb_node_list_gpu_node.csv");
  ASSERT_TRUE(yaml.ok()) << yaml.error().message;
  auto sc = ParseScenario(*yaml, "openb.yaml");
  ASSERT_TRUE(sc.ok()) << sc.error().message;

  // Expected, straight from the CSV: Σ num_gpu x gpu_milli/1000 x (deletion - scheduled).
  std::map<std::string, __int128> expected_ppd_us;  // ppd-µs per namespace
  std::istringstream in(pods);
  std::string line;
  std::getline(in, line);  // header: name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,...
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ls(line);
    std::string cell;
    while (std::getline(ls, cell, ',')) f.push_back(cell);
    f.resize(11);
    if (f[10].empty() || f[9].empty()) continue;
    long long num_gpu = std::stoll(f[3]), milli = std::stoll(f[4]);
    long long del = std::stoll(f[9]), sched = std::stoll(f[10]);
    std::string ns = f[6];
    for (auto& c : ns) c = static_cast<char>(std::tolower(c));
    expected_ppd_us[ns] += static_cast<__int128>(num_gpu) * milli * (kWholeGpu / 1000) *
                           (del - sched) * kMicrosPerSecond;
  }

  Simulator sim(*sc, 3600 * kMicrosPerSecond);
  long long snapshots = 0;
  sim.Run([&](const NodeSnapshot& s) {
    ++snapshots;
    ASSERT_EQ(HourStart(s.start_us), HourStart(s.end_us - 1));
  });
  std::map<std::string, __int128> got;
  for (auto& [ref, t] : sim.truth()) got[ref.namespace_name] += t.allocated_ppd_us;
  for (auto& [ns, e] : expected_ppd_us) {
    if (e == 0) continue;
    EXPECT_TRUE(got[ns] == e) << ns << ": got " << static_cast<double>(got[ns]) << " expected "
                              << static_cast<double>(e);
  }
  EXPECT_GT(snapshots, 0);
  std::cout << "openb replay: " << sc->nodes.size() << " nodes, " << sc->workloads.size()
            << " pods, " << snapshots << " snapshots\n";
}

}  // namespace
}  // namespace gpuledger::sim
