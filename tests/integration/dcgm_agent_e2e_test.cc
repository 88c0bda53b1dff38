// `gpuledger agent --dcgm-exporter URL` as an operator runs it: `gpuledger-sim-node` (the NVML
// stand-in, fake kubelet and CRI) and the real agent binary, reading a fake dcgm-exporter served
// from this process over HTTP. The containers' SM/tensor/DRAM activity must come out of the
// agent's /metrics with activity_source naming dcgm-exporter, and an exporter that goes away
// must show as a counted fault, never as an agent failure.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "io/file_util.h"
#include "process_util.h"
#include "test_paths.h"

namespace gpuledger {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// The sample value of the first series of `name` whose label text contains `needle`; -1: none.
double Value(const std::string& text, const std::string& name, const std::string& needle) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name + "{", 0) != 0 || line.find(needle) == std::string::npos) continue;
    return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return -1;
}

TEST(DcgmAgentE2e, ActivityFromAFakeExporterReachesTheContainers) {
  const fs::path dir =
      fs::temp_directory_path() / ("gpuledger-dcgm-e2e-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  ASSERT_TRUE(WriteFile((dir / "scenario.yaml").string(), R"(
name: dcgm-e2e
start: "2026-11-23T00:00:00Z"
duration: 2h
nodes:
  - {name: n1, gpu_model: A100-80GB, gpus: 2, sharing: exclusive}
workloads:
  - {namespace: ml, name: trainer, replicas: 1, gpus: 1, compute: {profile: constant, duty: 0.9}, memory: {bytes: 3GiB}}
)")
                  .ok());

  // The fake exporter: the classic field set for whatever GPUs the agent reports (learned from
  // its own /metrics below), SM active 0.5 and friends on each.
  std::mutex mu;
  std::set<std::string> uuids;
  std::atomic<bool> down{false};
  std::atomic<int> scrapes{0};
  httplib::Server exporter;
  exporter.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    ++scrapes;
    if (down.load()) {
      res.status = 503;
      return;
    }
    std::string body;
    std::lock_guard lock(mu);
    int gpu = 0;
    for (const std::string& u : uuids) {
      const std::string labels = "{gpu=\"" + std::to_string(gpu++) + "\",UUID=\"" + u +
                                 "\",DCGM_FI_DRIVER_VERSION=\"570.124.06\"}";
      body += "DCGM_FI_PROF_SM_ACTIVE" + labels + " 0.500000\n";
      body += "DCGM_FI_PROF_SM_OCCUPANCY" + labels + " 0.250000\n";
      body += "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" + labels + " 0.125000\n";
      body += "DCGM_FI_PROF_DRAM_ACTIVE" + labels + " 0.375000\n";
      // Power moves between scrapes, as on any live GPU: never stale.
      body +=
          "DCGM_FI_DEV_POWER_USAGE" + labels + " " + std::to_string(100 + scrapes.load()) + "\n";
    }
    if (body.empty()) body = "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-not-yet\"} 0\n";
    res.set_content(body, "text/plain; version=0.0.4");
  });
  const int exporter_port = exporter.bind_to_any_port("127.0.0.1");
  ASSERT_GT(exporter_port, 0);
  std::thread serving([&] { exporter.listen_after_bind(); });

  {
    Child node({gpuledger::test_paths::kSimNodeBin, "--scenario", (dir / "scenario.yaml").string(),
                "--node", "n1", "--dir", (dir / "node").string()},
               (dir / "node.out").string());
    ASSERT_TRUE(node.ok());
    std::string command =
        WaitFor((dir / "node.out").string(), std::regex("^(GPULEDGER_NVML_SCENARIO=.*)$"), 20s);
    ASSERT_FALSE(command.empty()) << *ReadFile((dir / "node.out.err").string());
    command = std::regex_replace(command, std::regex("127\\.0\\.0\\.1:9400"), "127.0.0.1:0");
    command = std::regex_replace(command, std::regex("--interval 1s"), "--interval 200ms");
    const PrintedCommand printed = SplitPrintedCommand(command);
    ASSERT_FALSE(printed.argv.empty()) << command;
    std::vector<std::string> argv = printed.argv;
    argv.push_back("--dcgm-exporter");
    argv.push_back("http://127.0.0.1:" + std::to_string(exporter_port) + "/metrics");
    Child agent(argv, (dir / "agent.out").string(), {printed.env});
    ASSERT_TRUE(agent.ok());
    const std::string port =
        WaitFor((dir / "agent.out").string(), std::regex("http://[^:]+:(\\d+)/metrics"), 20s);
    ASSERT_FALSE(port.empty()) << *ReadFile((dir / "agent.out.err").string());
    EXPECT_NE(ReadFile((dir / "agent.out.err").string())->find("dcgm-exporter at http://127.0.0.1"),
              std::string::npos)
        << "Describe() names the exporter";
    httplib::Client http("127.0.0.1", std::stoi(port));
    http.set_read_timeout(2, 0);

    // Learn the GPUs from the agent and serve them.
    std::string text;
    for (int i = 0; i < 50 && uuids.empty(); ++i) {
      std::this_thread::sleep_for(200ms);
      auto r = http.Get("/metrics");
      if (!r) continue;
      text = r->body;
      std::regex info("gpuledger_device_info\\{[^}]*gpu_uuid=\"(GPU-[^\"]+)\"");
      std::lock_guard lock(mu);
      for (std::sregex_iterator it(text.begin(), text.end(), info), end; it != end; ++it)
        uuids.insert((*it)[1].str());
    }
    ASSERT_FALSE(uuids.empty()) << text;

    // A scrape covers 5 s of cycles: the exporter is read every 5 s of the agent's time.
    double sm = -1;
    for (int i = 0; i < 60 && sm <= 0; ++i) {
      std::this_thread::sleep_for(250ms);
      auto r = http.Get("/metrics");
      ASSERT_TRUE(r);
      text = r->body;
      sm = Value(text, "gpuledger_container_sm_active_gpu_seconds_total", "namespace=\"ml\"");
    }
    ASSERT_GT(sm, 0) << text;
    // The exporter's 0.5 : 0.25 : 0.125 : 0.375 arrive as the same proportions of GPU-seconds.
    const double occupancy =
        Value(text, "gpuledger_container_sm_occupancy_gpu_seconds_total", "namespace=\"ml\"");
    const double tensor =
        Value(text, "gpuledger_container_tensor_active_gpu_seconds_total", "namespace=\"ml\"");
    const double dram =
        Value(text, "gpuledger_container_dram_active_gpu_seconds_total", "namespace=\"ml\"");
    EXPECT_NEAR(occupancy / sm, 0.5, 0.01);
    EXPECT_NEAR(tensor / sm, 0.25, 0.01);
    EXPECT_NEAR(dram / sm, 0.75, 0.01);
    EXPECT_NE(text.find("activity_source=\""), std::string::npos);
    std::smatch source;
    ASSERT_TRUE(std::regex_search(text, source,
                                  std::regex("gpuledger_container_attribution_info\\{[^}]*"
                                             "namespace=\"ml\"[^}]*activity_source=\"([^\"]*)\"")))
        << text;
    EXPECT_NE(source[1].str().find("dcgm"), std::string::npos) << source[1].str();
    std::printf("sm_active %.3f GPU-s, activity_source \"%s\"\n", sm, source[1].str().c_str());

    // The exporter fails: counted, the agent serves on.
    down = true;
    double errors = 0;
    for (int i = 0; i < 60 && errors <= 0; ++i) {
      std::this_thread::sleep_for(250ms);
      auto r = http.Get("/metrics");
      ASSERT_TRUE(r);
      ASSERT_EQ(r->status, 200);
      errors = Value(r->body, "gpuledger_agent_source_errors_total",
                     "code=\"FETCH_FAILED\",source=\"dcgm-exporter\"");
      if (errors <= 0)
        errors = Value(r->body, "gpuledger_agent_source_errors_total",
                       "source=\"dcgm-exporter\",code=\"FETCH_FAILED\"");
      text = r->body;
    }
    EXPECT_GT(errors, 0) << text;
  }
  exporter.stop();
  serving.join();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuledger
