// `gpuledger server --source scrape` as an operator runs it, against a real agent on a
// simulated node: the server is SIGKILLed mid-run and restarted, the agent is killed and
// restarted (its counters reset), and the ledger still holds exactly what the agent counted
// (within the scrape intervals that no scrape can see), with every hour row conserving.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include <httplib.h>

#include "free_port.h"
#include "io/file_util.h"
#include "process_util.h"
#include "prometheus/exposition_parser.h"
#include "store/ledger_store.h"
#include "test_paths.h"

extern char** environ;

namespace gpuledger {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using Proc = Child;

using gpuledger::testing::FreePort;

// The agent's own allocated GPU-µs per pod, read straight from its /metrics.
std::map<std::string, double> AgentAllocated(int port) {
  httplib::Client http("127.0.0.1", port);
  http.set_read_timeout(2, 0);
  auto r = http.Get("/metrics");
  std::map<std::string, double> out;
  if (!r || r->status != 200) return out;
  auto e = prometheus::ParseExposition(r->body);
  EXPECT_TRUE(e.ok()) << e.error().message;
  if (!e.ok()) return out;
  for (const auto& s : e->samples) {
    if (s.name != "gpuledger_container_allocated_gpu_seconds_total") continue;
    for (const auto& [k, v] : s.labels)
      if (k == "pod") out[v] += s.value * 1e6;
  }
  return out;
}

TEST(ScrapeIngestE2e, ServerKilledAndAgentRestartedKeepExactTotals) {
  const fs::path dir =
      fs::temp_directory_path() / ("gpuledger-scrape-e2e-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  ASSERT_TRUE(WriteFile((dir / "scenario.yaml").string(), R"(
name: scrape-e2e
start: "2026-11-23T00:00:00Z"
duration: 2h
nodes:
  - {name: n1, gpu_model: A100-80GB, gpus: 2, sharing: time-slicing, replicas: 4}
workloads:
  - {namespace: web, name: api, replicas: 3, compute: {profile: constant, duty: 0.2}, memory: {bytes: 3GiB}}
)")
                  .ok());
  const std::string db = (dir / "ledger.db").string();
  {
    Proc node({gpuledger::test_paths::kSimNodeBin, "--scenario", (dir / "scenario.yaml").string(),
               "--node", "n1", "--dir", (dir / "node").string()},
              (dir / "node.out").string());
    ASSERT_TRUE(node.ok());
    std::string command =
        WaitFor((dir / "node.out").string(), std::regex("^(GPULEDGER_NVML_SCENARIO=.*)$"), 20s);
    ASSERT_FALSE(command.empty()) << *ReadFile((dir / "node.out.err").string());
    const int agent_port = FreePort();
    const std::string target = "127.0.0.1:" + std::to_string(agent_port);
    command = std::regex_replace(command, std::regex("127\\.0\\.0\\.1:9400"), target);
    command = std::regex_replace(command, std::regex("--interval 1s"), "--interval 200ms");
    const PrintedCommand printed = SplitPrintedCommand(command);
    ASSERT_FALSE(printed.argv.empty()) << command;
    std::vector<std::string> agent_argv = printed.argv;
    const std::vector<std::string> server_argv{gpuledger::test_paths::kGpuledgerBin,
                                               "server",
                                               "--source",
                                               "scrape",
                                               "--targets",
                                               target,
                                               "--ledger",
                                               "sqlite:" + db,
                                               "--listen",
                                               "127.0.0.1:0",
                                               "--scrape-interval",
                                               "500ms"};

    // The server first: it counts the agent as down until the agent answers.
    auto server = std::make_unique<Proc>(server_argv, (dir / "server1.out").string());
    ASSERT_FALSE(
        WaitFor((dir / "server1.out").string(), std::regex("http://[^:]+:(\\d+)/"), 20s).empty())
        << *ReadFile((dir / "server1.out.err").string());
    auto agent = std::make_unique<Proc>(agent_argv, (dir / "agent1.out").string(),
                                        std::vector<std::string>{printed.env});
    ASSERT_FALSE(
        WaitFor((dir / "agent1.out").string(), std::regex("http://[^:]+:(\\d+)/metrics"), 20s)
            .empty())
        << *ReadFile((dir / "agent1.out.err").string());
    std::this_thread::sleep_for(3s);

    // SIGKILL mid-run: no chance to save anything more; restart on the same ledger.
    server->Stop(SIGKILL);
    std::this_thread::sleep_for(1s);
    server = std::make_unique<Proc>(server_argv, (dir / "server2.out").string());
    const std::string server_port =
        WaitFor((dir / "server2.out").string(), std::regex("http://[^:]+:(\\d+)/"), 20s);
    ASSERT_FALSE(server_port.empty()) << *ReadFile((dir / "server2.out.err").string());
    std::this_thread::sleep_for(3s);

    // The agent restarts: its counters start again from zero.
    const auto before_restart = AgentAllocated(agent_port);
    agent->Stop(SIGKILL);
    std::this_thread::sleep_for(1500ms);
    {
      httplib::Client http("127.0.0.1", std::stoi(server_port));
      auto m = http.Get("/metrics");
      ASSERT_TRUE(m);
      EXPECT_NE(m->body.find("gpuledger_server_scrape_errors_total{target=\"" + target + "\"}"),
                std::string::npos)
          << m->body;
      EXPECT_NE(m->body.find("gpuledger_server_scrape_up{target=\"" + target + "\"} 0"),
                std::string::npos)
          << m->body;
      auto api = http.Get("/api/v1/devices?window=all");
      ASSERT_TRUE(api);
      EXPECT_EQ(api->status, 200) << "the API serves while a target is down";
    }
    agent = std::make_unique<Proc>(agent_argv, (dir / "agent2.out").string(),
                                   std::vector<std::string>{printed.env});
    ASSERT_FALSE(
        WaitFor((dir / "agent2.out").string(), std::regex("http://[^:]+:(\\d+)/metrics"), 20s)
            .empty())
        << *ReadFile((dir / "agent2.out.err").string());
    std::this_thread::sleep_for(3s);
    server->Stop(SIGTERM);
    const auto at_end = AgentAllocated(agent_port);
    agent.reset();
    EXPECT_NE(ReadFile((dir / "server2.out.err").string())->find("ingest: scrape " + target),
              std::string::npos)
        << "the outage is logged";

    auto store = store::OpenSqliteLedger(db);
    ASSERT_TRUE(store.ok()) << store.error().message;
    auto devices = (*store)->ReadDeviceHours({});
    auto usage = (*store)->ReadUsage({});
    ASSERT_TRUE(devices.ok() && usage.ok());
    ASSERT_FALSE(devices->empty());
    std::map<std::string, double> ledger;
    for (const UsageRow& u : *usage)
      ledger[u.consumer.ref.pod] += static_cast<double>(u.allocated_us);
    for (const DeviceHour& d : *devices) {
      // No hour doubled: each row conserves and never exceeds its hour.
      GpuMicros sum = d.unallocated_us;
      for (const UsageRow& u : *usage)
        if (u.hour_us == d.hour_us && u.gpu == d.gpu) sum += u.allocated_us;
      EXPECT_EQ(sum, d.metered_us) << d.gpu.value;
      EXPECT_EQ(d.metered_us + d.unmetered_us, kMicrosPerHour);
    }
    // What no scrape could see: before the first scrape, between the last scrape of the first
    // agent and its kill, after the last scrape of the server: one scrape interval each, at
    // a quarter GPU per pod (4 replicas), plus a margin for the timing of these reads.
    const double tolerance = 3 * 0.5e6 * 0.25 + 0.2e6;
    ASSERT_EQ(at_end.size(), 3u);
    for (const auto& [pod, end] : at_end) {
      const double agent_total = end + before_restart.at(pod);
      std::printf("%s: ledger %.0f GPU-us, agent %.0f + %.0f GPU-us\n", pod.c_str(), ledger[pod],
                  before_restart.at(pod), end);
      EXPECT_NEAR(ledger[pod], agent_total, tolerance) << pod;
      EXPECT_LE(ledger[pod], agent_total + 1e3) << pod << ": never more than the agent counted";
      EXPECT_GT(ledger[pod], 1e6) << pod;
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuledger
