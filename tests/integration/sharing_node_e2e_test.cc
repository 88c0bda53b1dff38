// Every sharing layer on a "real" node: `gpuledger-sim-node` lays out an MPS node, a HAMi node
// and an Alibaba GPU-share node as their device plugins and runtimes show them (procfs environ,
// PodResources with the real resource names and device ids, the NVML stand-in's MPS process
// list), and a real `gpuledger agent` on each must say what the node runs: the sharing mode,
// each container's declared share and where it came from. The expected shares are the
// scenario's, written here; allocation is checked as a fraction of the metered time.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include <httplib.h>

#include "io/file_util.h"
#include "process_util.h"
#include "prometheus/exposition_parser.h"
#include "temp_dir.h"
#include "test_paths.h"

namespace gpuledger {
namespace {

namespace fs = std::filesystem;

constexpr char kScenario[] = R"(
name: sharing-layers
start: "2026-11-23T00:00:00Z"
duration: 2h
nodes:
  - {name: mps, gpu_model: L4, gpus: 1, sharing: mps, replicas: 4}
  - {name: hami, gpu_model: A100-80GB, gpus: 1, sharing: fractional, fractional_layer: hami}
  - {name: gpushare, gpu_model: A10, gpus: 2, sharing: fractional, fractional_layer: gpushare}
workloads:
  - {namespace: speech, name: asr, node: mps, mps_active_thread_percentage: 25,
     compute: {profile: constant, duty: 0.2}, memory: {bytes: 2GiB}}
  - {namespace: speech, name: tts, node: mps, mps_active_thread_percentage: 50,
     compute: {profile: constant, duty: 0.3}, memory: {bytes: 3GiB}}
  - {namespace: ml, name: small, node: hami, fraction: 0.3,
     compute: {profile: constant, duty: 0.2}, memory: {bytes: 8GiB}}
  - {namespace: ml, name: medium, node: hami, fraction: 0.5,
     compute: {profile: constant, duty: 0.4}, memory: {bytes: 20GiB}}
  - {namespace: ocr, name: scan, node: gpushare, fraction: 0.25,
     compute: {profile: constant, duty: 0.3}, memory: {bytes: 4GiB}}
  - {namespace: ocr, name: thumbs, node: gpushare, fraction: 0.5,
     compute: {profile: constant, duty: 0.2}, memory: {bytes: 6GiB}}
)";

struct Expected {
  std::string pod;
  double share;
  std::string share_source;
};

// What one agent exposes, by pod: allocated GPU-seconds, share source, and the GPU's mode.
struct Seen {
  std::map<std::string, double> allocated_s;
  std::map<std::string, std::string> share_source;
  std::map<std::string, std::string> gpu_of;
  std::map<std::string, std::string> mode;  // GPU uuid -> sharing_mode
  std::map<std::string, double> metered_s;  // GPU uuid -> metered seconds
};

std::string Label(const prometheus::Sample& s, const std::string& name) {
  for (const auto& [k, v] : s.labels)
    if (k == name) return v;
  return {};
}

Seen Scrape(int port) {
  httplib::Client http("127.0.0.1", port);
  http.set_read_timeout(2, 0);
  auto res = http.Get("/metrics");
  EXPECT_TRUE(res && res->status == 200);
  Seen seen;
  auto e = prometheus::ParseExposition(res ? res->body : "");
  EXPECT_TRUE(e.ok()) << e.error().message;
  if (!e.ok()) return seen;
  for (const auto& s : e->samples) {
    const std::string pod = Label(s, "pod");
    if (s.name == "gpuledger_container_allocated_gpu_seconds_total") {
      seen.allocated_s[pod] += s.value;
      seen.gpu_of[pod] = Label(s, "gpu_uuid");
    } else if (s.name == "gpuledger_container_attribution_info") {
      seen.share_source[pod] = Label(s, "share_source");
    } else if (s.name == "gpuledger_device_info") {
      seen.mode[Label(s, "gpu_uuid")] = Label(s, "sharing_mode");
    } else if (s.name == "gpuledger_device_metered_seconds_total") {
      seen.metered_s[Label(s, "gpu_uuid")] = s.value;
    }
  }
  return seen;
}

TEST(SharingNodeE2e, MpsHamiAndGpuShareNodesShowTheirModeAndDeclaredShares) {
  // Removed last, after the nodes and the server writing into it have stopped.
  const testing::TempDir temp("gpuledger-sharing");
  const fs::path& dir = temp.path();
  ASSERT_TRUE(WriteFile((dir / "scenario.yaml").string(), kScenario).ok());
  const std::map<std::string, std::pair<std::string, std::vector<Expected>>> nodes = {
      {"mps",
       {"mps",
        {{"asr-0", 0.25, "env:CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"},
         {"tts-0", 0.50, "env:CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"}}}},
      {"hami",
       {"fractional",
        {{"small-0", 0.3, "resource:nvidia.com/gpucores"},
         {"medium-0", 0.5, "resource:nvidia.com/gpucores"}}}},
      {"gpushare",
       {"fractional",
        {{"scan-0", 0.25, "resource:aliyun.com/gpu-mem"},
         {"thumbs-0", 0.5, "resource:aliyun.com/gpu-mem"}}}},
  };
  std::vector<std::unique_ptr<Child>> children;
  std::map<std::string, int> ports;
  for (const auto& [n, want] : nodes) {
    children.push_back(std::make_unique<Child>(
        std::vector<std::string>{gpuledger::test_paths::kSimNodeBin, "--scenario",
                                 (dir / "scenario.yaml").string(), "--node", n, "--dir",
                                 (dir / n).string(), "--standin-step", "100ms"},
        (dir / (n + ".out")).string()));
    std::string command =
        WaitFor((dir / (n + ".out")).string(), std::regex("^(GPULEDGER_NVML_SCENARIO=.*)$"), 20s);
    ASSERT_FALSE(command.empty()) << *ReadFile((dir / (n + ".out.err")).string());
    command = std::regex_replace(command, std::regex("127\\.0\\.0\\.1:9400"), "127.0.0.1:0");
    command = std::regex_replace(command, std::regex("--interval 1s"), "--interval 200ms");
    const PrintedCommand printed = SplitPrintedCommand(command);
    ASSERT_FALSE(printed.argv.empty()) << command;
    std::vector<std::string> argv = printed.argv;
    children.push_back(std::make_unique<Child>(argv, (dir / (n + "-agent.out")).string(),
                                               std::vector<std::string>{printed.env}));
    const std::string port = WaitFor((dir / (n + "-agent.out")).string(),
                                     std::regex("http://[^:]+:(\\d+)/metrics"), 20s);
    ASSERT_FALSE(port.empty()) << *ReadFile((dir / (n + "-agent.out.err")).string());
    ports[n] = std::stoi(port);
  }
  std::this_thread::sleep_for(5s);
  for (const auto& [n, want] : nodes) {
    const Seen seen = Scrape(ports[n]);
    for (const Expected& e : want.second) {
      ASSERT_TRUE(seen.allocated_s.count(e.pod)) << n << " " << e.pod;
      const std::string gpu = seen.gpu_of.at(e.pod);
      EXPECT_EQ(seen.mode.at(gpu), want.first) << n;
      EXPECT_EQ(seen.share_source.at(e.pod), e.share_source) << n << " " << e.pod;
      // The pods run from the scenario's start, so over everything the agent metered they
      // held exactly their declared share.
      const double metered = seen.metered_s.at(gpu);
      ASSERT_GT(metered, 3.0) << n;
      EXPECT_NEAR(seen.allocated_s.at(e.pod) / metered, e.share, 0.001 * e.share)
          << n << " " << e.pod;
    }
  }
}

}  // namespace
}  // namespace gpuledger
