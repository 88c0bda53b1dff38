// Kubernetes metadata end to end: `gpuledger server --source files=DIR --api-server URL`
// replays agent snapshots while watching a fake API server; the ledger's rows carry the
// top controller (Pod -> ReplicaSet -> Deployment), pod and namespace labels, and prices come
// from the node's labels.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/units.h"
#include "fake_apiserver/fake_apiserver.h"
#include "io/file_util.h"
#include "process_util.h"
#include "temp_dir.h"
#include "test_paths.h"

namespace gpuledger {
namespace {

namespace fs = std::filesystem;

// One agent snapshot: one A100 (node gpu-1), one container at a quarter share.
std::string Snapshot(double seconds) {
  const char* labels =
      "namespace=\"ml\",pod=\"train-7d9f-abcde\",pod_uid=\"u-1\",container=\"main\",gpu_uuid=\"GPU-"
      "1\"";
  return fmt::format(
      "gpuledger_device_info{{gpu_uuid=\"GPU-1\",gpu_model=\"A100-80GB\",node=\"gpu-1\",parent_"
      "uuid=\"\",mig_profile=\"\",sharing_mode=\"time-slicing\"}} 1\n"
      "gpuledger_device_metered_seconds_total{{gpu_uuid=\"GPU-1\"}} {0}\n"
      "gpuledger_device_busy_seconds_total{{gpu_uuid=\"GPU-1\"}} {1}\n"
      "gpuledger_device_idle_seconds_total{{gpu_uuid=\"GPU-1\"}} {2}\n"
      "gpuledger_device_unattributed_seconds_total{{gpu_uuid=\"GPU-1\"}} 0\n"
      "gpuledger_container_allocated_gpu_seconds_total{{{3}}} {4}\n"
      "gpuledger_container_compute_gpu_seconds_total{{{3}}} {1}\n"
      "gpuledger_container_attribution_info{{{3},compute_source=\"measured:process-samples\","
      "memory_source=\"measured\"}} 1\n",
      seconds, seconds * 0.2, seconds * 0.8, labels, seconds / 4);
}

TEST(MetadataE2e, LedgerRowsCarryOwnersLabelsAndNodePrices) {
  fake::FakeApiServer api;
  ASSERT_TRUE(api.Start().ok());
  api.Upsert("namespaces", fake::MakeNamespace("ml", {{"team", "research"}}));
  api.Upsert("nodes",
             fake::MakeNode("gpu-1", {{"karpenter.sh/capacity-type", "spot"},
                                      {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}}));
  api.Upsert("replicasets",
             fake::MakeOwned("ReplicaSet", "ml", "train-7d9f", "Deployment", "train"));
  api.Upsert("pods", fake::MakePod("ml", "train-7d9f-abcde", {{"app", "train"}}, "ReplicaSet",
                                   "train-7d9f", "gpu-1"));

  const fs::path dir = fs::temp_directory_path() / ("gpuledger-meta-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "snapshots");
  // 2026-11-23T00:00:00Z and then every 10 minutes for an hour.
  const std::int64_t t0_ms = 1795392000000;
  for (int i = 0; i <= 6; ++i)
    ASSERT_TRUE(
        WriteFile((dir / "snapshots" / fmt::format("node-gpu-1:9400@{}.prom", t0_ms + i * 600000))
                      .string(),
                  Snapshot(100 + i * 600.0))
            .ok());
  int code = 0;
  const std::string bin = gpuledger::test_paths::kGpuledgerBin;
  const std::string db = (dir / "l.db").string();
  std::string out = RunCapture(bin + " server --source files=" + (dir / "snapshots").string() +
                                   " --api-server " + api.url() + " --ledger sqlite:" + db,
                               &code);
  ASSERT_EQ(code, 0) << out;
  std::string by_owner =
      RunCapture(bin + " report --db " + db + " --by controller,label:team --format json", &code);
  ASSERT_EQ(code, 0) << by_owner;
  auto j = nlohmann::json::parse(by_owner);
  ASSERT_EQ(j["rows"].size(), 1u) << by_owner;
  EXPECT_EQ(j["rows"][0]["key"], "ml/Deployment/train/research");
  // An hour of a quarter of the GPU, exactly as the counters say.
  EXPECT_EQ(j["rows"][0]["allocated_gpu_us"].get<std::int64_t>(), 3600 * kMicrosPerSecond / 4);
  // The node's labels priced it as a spot A100-80GB (the catalog's GCP spot price).
  std::string by_model =
      RunCapture(bin + " report --db " + db + " --by gpu_model --format json", &code);
  auto k = nlohmann::json::parse(by_model);
  EXPECT_GT(k["total"]["device_cost_nanos"].get<std::int64_t>(), 0) << by_model;
  EXPECT_TRUE(k["total"]["unpriced_models"].empty());
  std::string classes =
      RunCapture("sqlite3 " + db + " 'select distinct pricing_class from placements'", &code);
  if (code == 0) {
    EXPECT_EQ(classes, "spot\n");
  }
  api.Stop();
  fs::remove_all(dir);
}

// The server finds the agents from their Service's Endpoints, as it would in a cluster.
TEST(MetadataE2e, ScrapeTargetsComeFromTheAgentsEndpoints) {
  // Removed last, after the processes below that write into it have stopped.
  const testing::TempDir temp("gpuledger-ep");
  const fs::path& dir = temp.path();
  const std::string bin = gpuledger::test_paths::kGpuledgerBin;
  ASSERT_TRUE(WriteFile((dir / "scenario.yaml").string(), R"(
name: ep
start: "2026-11-23T00:00:00Z"
duration: 2h
nodes:
  - {name: n1, gpu_model: L4, gpus: 1}
workloads:
  - {namespace: ml, name: solo, compute: {profile: constant, duty: 0.5}, memory: {bytes: 1GiB}}
)")
                  .ok());
  Child node({gpuledger::test_paths::kSimNodeBin, "--scenario", (dir / "scenario.yaml").string(),
              "--node", "n1", "--dir", (dir / "node").string()},
             (dir / "node.out").string());
  std::string command =
      WaitFor((dir / "node.out").string(), std::regex("^(GPULEDGER_NVML_SCENARIO=.*)$"), 20s);
  ASSERT_FALSE(command.empty());
  command = std::regex_replace(command, std::regex("127\\.0\\.0\\.1:9400"), "127.0.0.1:0");
  const PrintedCommand printed = SplitPrintedCommand(command);
  ASSERT_FALSE(printed.argv.empty()) << command;
  std::vector<std::string> argv = printed.argv;
  Child agent(argv, (dir / "agent.out").string(), {printed.env});
  const std::string port =
      WaitFor((dir / "agent.out").string(), std::regex("http://[^:]+:(\\d+)/metrics"), 20s);
  ASSERT_FALSE(port.empty());

  fake::FakeApiServer api;
  ASSERT_TRUE(api.Start().ok());
  api.Upsert("endpoints",
             nlohmann::json{{"kind", "Endpoints"},
                            {"apiVersion", "v1"},
                            {"metadata", {{"namespace", "gpuledger"}, {"name", "agent"}}},
                            {"subsets",
                             {{{"addresses", {{{"ip", "127.0.0.1"}}}},
                               {"ports", {{{"name", "metrics"}, {"port", std::stoi(port)}}}}}}}});
  const std::string db = (dir / "l.db").string();
  {
    Child server({bin, "server", "--source", "scrape", "--targets-from", "gpuledger/agent:metrics",
                  "--api-server", api.url(), "--scrape-interval", "500ms", "--ledger",
                  "sqlite:" + db, "--listen", "127.0.0.1:0"},
                 (dir / "server.out").string());
    std::this_thread::sleep_for(6s);
  }
  int code = 0;
  std::string out = RunCapture(bin + " report --db " + db + " --by pod --format json", &code);
  ASSERT_EQ(code, 0) << out;
  auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j["rows"].size(), 1u) << out << *ReadFile((dir / "server.out.err").string());
  EXPECT_EQ(j["rows"][0]["key"], "ml/solo-0");
  EXPECT_GT(j["rows"][0]["allocated_gpu_us"].get<std::int64_t>(), 3 * kMicrosPerSecond);
  api.Stop();
}

}  // namespace
}  // namespace gpuledger
