// The agent as an operator runs it: `gpuledger sim node` and `gpuledger agent` as real
// processes, scraped over HTTP (plain and gzip), checked by promtool, with a hung NVML.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <httplib.h>

#include "agent/exposition.h"
#include "common/file_util.h"
#include "process_util.h"

extern char** environ;

namespace gpuledger {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(AgentE2e, RealProcessesScrapedOverHttpAndCheckedByPromtool) {
  const fs::path dir = fs::temp_directory_path() / ("gpuledger-e2e-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  ASSERT_TRUE(WriteFile((dir / "scenario.yaml").string(), R"(
name: e2e
start: "2026-11-23T00:00:00Z"
duration: 2h
nodes:
  - {name: n1, gpu_model: A100-80GB, gpus: 2, sharing: time-slicing, replicas: 4}
workloads:
  - {namespace: web, name: api, replicas: 3, compute: {profile: constant, duty: 0.2}, memory: {bytes: 3GiB}}
  - {namespace: web, name: rogue, request: none, uses_gpu: {node: n1, index: 1}, visible_devices: all, compute: {profile: constant, duty: 0.1}, memory: {bytes: 1GiB}}
)").ok());
  {
    Child node({GPULEDGER_BIN, "sim", "node", "--scenario", (dir / "scenario.yaml").string(),
                "--node", "n1", "--dir", (dir / "node").string()},
               (dir / "node.out").string());
    ASSERT_TRUE(node.ok());
    // The printed command is the contract: run exactly what `sim node` says.
    std::string command = WaitFor((dir / "node.out").string(), std::regex("^(GPULEDGER_NVML_SCENARIO=.*)$"), 20s);
    ASSERT_FALSE(command.empty()) << *ReadFile((dir / "node.out.err").string());
    command = std::regex_replace(command, std::regex("127\\.0\\.0\\.1:9400"), "127.0.0.1:0");
    command = std::regex_replace(command, std::regex("--interval 1s"), "--interval 200ms --nvml-timeout 500ms");
    std::smatch env;
    ASSERT_TRUE(std::regex_search(command, env, std::regex("^(\\S+) (.*)$")));
    std::vector<std::string> argv;
    std::istringstream words(env[2].str());
    for (std::string w; words >> w;) argv.push_back(w);
    Child agent(argv, (dir / "agent.out").string(), {env[1].str()});
    ASSERT_TRUE(agent.ok());
    const std::string port = WaitFor((dir / "agent.out").string(), std::regex("http://[^:]+:(\\d+)/metrics"), 20s);
    ASSERT_FALSE(port.empty()) << *ReadFile((dir / "agent.out.err").string());
    httplib::Client http("127.0.0.1", std::stoi(port));
    http.set_read_timeout(2, 0);
    std::this_thread::sleep_for(3s);

    auto health = http.Get("/healthz");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
    auto plain = http.Get("/metrics");
    ASSERT_TRUE(plain);
    ASSERT_EQ(plain->status, 200);
    const std::string text = plain->body;
    EXPECT_NE(text.find("gpuledger_container_compute_gpu_seconds_total{namespace=\"web\",pod=\"api-0\""), std::string::npos);
    EXPECT_NE(text.find("pod=\"rogue-0\""), std::string::npos) << "a pod with no GPU grant still shows";
    auto gz = http.Get("/metrics", {{"Accept-Encoding", "gzip"}});
    ASSERT_TRUE(gz);
    // httplib may decompress transparently when built with zlib; either way the text is valid.
    if (gz->get_header_value("Content-Encoding") == "gzip") {
      auto back = agent::Gunzip(gz->body);
      ASSERT_TRUE(back.ok());
      EXPECT_NE(back->find("gpuledger_device_info"), std::string::npos);
    }

    // promtool, when installed (the install script brings it), must accept the exposition.
    ASSERT_TRUE(WriteFile((dir / "metrics.txt").string(), text).ok());
    if (std::system("command -v promtool >/dev/null 2>&1") == 0) {
      const std::string check = "promtool check metrics < " + (dir / "metrics.txt").string() +
                                " > " + (dir / "promtool.out").string() + " 2>&1";
      EXPECT_EQ(std::system(check.c_str()), 0) << *ReadFile((dir / "promtool.out").string());
    } else {
      std::printf("promtool not installed: skipped the lint (apt-get install prometheus)\n");
    }

    // A hung NVML: scrapes keep answering within 100 ms.
    ASSERT_TRUE(WriteFile((dir / "node" / "nvml-faults").string(), "hang all 2\n").ok());
    std::this_thread::sleep_for(600ms);
    for (int i = 0; i < 5; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      auto r = http.Get("/metrics");
      auto took = std::chrono::steady_clock::now() - t0;
      ASSERT_TRUE(r);
      EXPECT_EQ(r->status, 200);
      EXPECT_LT(took, 100ms);
      std::this_thread::sleep_for(200ms);
    }
    fs::remove(dir / "node" / "nvml-faults");
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuledger
