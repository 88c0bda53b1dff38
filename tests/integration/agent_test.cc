// The agent on its real interfaces, in one process: `gpuledger-sim-node` lays out a node (procfs
// tree, kubelet PodResources and CRI gRPC servers on unix sockets), the NVML stand-in is dlopen'ed
// through the agent's real NVML source, and the collector's rendered exposition is parsed back.
// Expected values come from the scenario (constant duties), not from the code under test.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "agent/collector.h"
#include "common/clock.h"
#include "fake_grpc/fake_cri.h"
#include "fake_grpc/fake_kubelet.h"
#include "io/file_reader.h"
#include "io/file_util.h"
#include "sim_node/sim_node.h"
#include "sources/cri/runtime.h"
#include "sources/kubelet/pod_resources.h"
#include "sources/nvml/nvml_source.h"
#include "sources/procfs/proc_source.h"
#include "test_paths.h"

namespace gpuledger {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// name -> [(labels, value)] from an exposition.
struct Metrics {
  struct Series {
    std::map<std::string, std::string> labels;
    double value;
  };
  std::map<std::string, std::vector<Series>> by_name;

  explicit Metrics(const std::string& text) {
    std::istringstream in(text);
    static const std::regex kLine(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$)");
    static const std::regex kLabel(R"re(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)")re");
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#') continue;
      std::smatch m;
      if (!std::regex_match(line, m, kLine)) continue;
      Series s;
      std::string labels = m[3];
      for (auto it = std::sregex_iterator(labels.begin(), labels.end(), kLabel);
           it != std::sregex_iterator(); ++it)
        s.labels[(*it)[1]] = (*it)[2];
      s.value = std::stod(m[4]);
      by_name[m[1]].push_back(s);
    }
  }

  // Sum over the series of `name` whose labels include all of `match`.
  double Sum(const std::string& name, const std::map<std::string, std::string>& match = {}) const {
    double sum = 0;
    auto it = by_name.find(name);
    if (it == by_name.end()) return 0;
    for (const auto& s : it->second) {
      bool ok = true;
      for (const auto& [k, v] : match) {
        auto l = s.labels.find(k);
        ok = ok && l != s.labels.end() && l->second == v;
      }
      if (ok) sum += s.value;
    }
    return sum;
  }
  const Series* Find(const std::string& name,
                     const std::map<std::string, std::string>& match) const {
    auto it = by_name.find(name);
    if (it == by_name.end()) return nullptr;
    for (const auto& s : it->second) {
      bool ok = true;
      for (const auto& [k, v] : match) {
        auto l = s.labels.find(k);
        ok = ok && l != s.labels.end() && l->second == v;
      }
      if (ok) return &s;
    }
    return nullptr;
  }
};

constexpr char kScenario[] = R"(
name: agent-it
start: "2026-11-23T00:00:00Z"
duration: 24h
seed: 11
namespaces:
  ml: {labels: {team: ml}}
nodes:
  - {name: ts-node, gpu_model: A100-80GB, gpus: 1, sharing: time-slicing, replicas: 4}
  - {name: mig-node, gpu_model: H100-80GB, gpus: 1, sharing: mig, mig_layout: [3g.40gb, 2g.20gb]}
  - {name: a100-mig-node, gpu_model: A100-40GB, gpus: 1, sharing: mig, mig_layout: [3g.20gb, 2g.10gb]}
  - {name: mps-node, gpu_model: L4, gpus: 1, sharing: mps, replicas: 4}
  - {name: guard-node, gpu_model: A100-80GB, gpus: 2, sharing: exclusive}
  - name: bare-node
    gpu_model: L4
    gpus: 1
    host_processes:
      - {name: "user:alice", compute: {profile: constant, duty: 0.4}, memory: {bytes: 3GiB}}
      - {name: "unit:slurmstepd.scope", compute: {profile: constant, duty: 0.2}, memory: {bytes: 1GiB}}
workloads:
  - {namespace: ml, name: p20, node: ts-node, compute: {profile: constant, duty: 0.2}, memory: {bytes: 4GiB}}
  - {namespace: ml, name: p30, node: ts-node, compute: {profile: constant, duty: 0.3}, memory: {bytes: 6GiB}}
  - {namespace: ml, name: p10, node: ts-node, compute: {profile: constant, duty: 0.1}, memory: {bytes: 2GiB}}
  - {namespace: ml, name: big, node: mig-node, mig_profile: 3g.40gb, compute: {profile: constant, duty: 0.5}, memory: {bytes: 10GiB}}
  - {namespace: ml, name: old, node: a100-mig-node, mig_profile: 3g.20gb, compute: {profile: constant, duty: 0.5}, memory: {bytes: 5GiB}}
  - {namespace: ml, name: a, node: mps-node, mps_active_thread_percentage: 50, compute: {profile: constant, duty: 0.3}, memory: {bytes: 1GiB}}
  - {namespace: ml, name: b, node: mps-node, compute: {profile: constant, duty: 0.2}, memory: {bytes: 1GiB}}
  - {namespace: ml, name: ok, node: guard-node, compute: {profile: constant, duty: 0.3}, memory: {bytes: 4GiB}}
  - {namespace: ml, name: debug, owner_kind: Pod, request: none, uses_gpu: {node: guard-node, index: 0},
     visible_devices: all, compute: {profile: constant, duty: 0.1}, memory: {bytes: 2GiB}}
)";

class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gpuledger-agent-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ASSERT_TRUE(WriteFile((dir_ / "scenario.yaml").string(), kScenario).ok());
  }
  void TearDown() override {
    collector_.reset();
    gpus_.reset();
    node_.reset();
    fs::remove_all(dir_);
  }

  void StartNode(const std::string& node,
                 const std::string& nvml_library = gpuledger::test_paths::kNvmlStandin) {
    simnode::SimNodeOptions o;
    o.scenario = (dir_ / "scenario.yaml").string();
    o.node = node;
    o.dir = (dir_ / node).string();
    o.standin_step = "100ms";
    o.terminal_linger_seconds = 5;
    auto n = simnode::SimNode::Start(o);
    ASSERT_TRUE(n.ok()) << n.error().message;
    node_ = std::move(*n);
    ::setenv("GPULEDGER_NVML_SCENARIO", node_->standin_config().c_str(), 1);
    files_ = MakePosixFileReader(node_->host_root());
    procs_ = std::make_unique<procfs::ProcSource>(*files_);
    kubelet_ = kubelet::MakeGrpcPodResourcesClient(node_->kubelet_socket());
    runtime_ = cri::MakeGrpcRuntimeClient(node_->cri_socket());
    gpus_ = nvml::OpenNvmlSource(nvml_library, 500'000, clock_);
    agent::CollectorOptions options;
    options.node = node;
    options.kube_refresh_us = 300'000;
    collector_ = std::make_unique<agent::Collector>(options, *gpus_, *procs_, kubelet_.get(),
                                                    runtime_.get(), clock_);
  }

  // Runs cycles every 100 ms for `seconds`, keeping the node's world current.
  void RunFor(double seconds) {
    auto end = std::chrono::steady_clock::now() +
               std::chrono::milliseconds(static_cast<int>(seconds * 1000));
    while (std::chrono::steady_clock::now() < end) {
      ASSERT_TRUE(node_->Update().ok());
      collector_->Cycle();
      std::this_thread::sleep_for(100ms);
    }
  }

  Metrics Scrape() const { return Metrics(collector_->Exposition()->text); }

  fs::path dir_;
  SystemClock clock_;  // the stand-in follows the real clocks
  std::unique_ptr<simnode::SimNode> node_;
  std::unique_ptr<FileReader> files_;
  std::unique_ptr<procfs::ProcSource> procs_;
  std::unique_ptr<kubelet::PodResourcesClient> kubelet_;
  std::unique_ptr<cri::RuntimeClient> runtime_;
  std::unique_ptr<sources::GpuSource> gpus_;
  std::unique_ptr<agent::Collector> collector_;
};

void ExpectDeviceConserved(const Metrics& m) {
  const double metered = m.Sum("gpuledger_device_metered_seconds_total");
  const double busy = m.Sum("gpuledger_device_busy_seconds_total");
  const double idle = m.Sum("gpuledger_device_idle_seconds_total");
  const double unattributed = m.Sum("gpuledger_device_unattributed_seconds_total");
  const double compute = m.Sum("gpuledger_container_compute_gpu_seconds_total");
  EXPECT_GT(metered, 0);
  EXPECT_NEAR(busy + idle, metered, 1e-6);
  EXPECT_NEAR(compute + unattributed, busy, 1e-6);
}

TEST_F(AgentTest, TimeSlicedThreePodsMatchTheScenario) {
  StartNode("ts-node");
  RunFor(8);
  Metrics m = Scrape();
  const double metered = m.Sum("gpuledger_device_metered_seconds_total");
  ASSERT_GT(metered, 5);
  ExpectDeviceConserved(m);
  // The device's busy time is right (within 2% plus one stand-in sample period of lag) and goes
  // to the three pods. How it splits among them is NVML's draw: each sample window goes whole to
  // one process (as on a real GPU), so over 8 s a pod's part is off by tens of percent; the
  // simulator's tests check the split over long runs.
  double pods_compute = 0;
  for (const char* pod : {"p20-0", "p30-0", "p10-0"}) {
    const double allocated =
        m.Sum("gpuledger_container_allocated_gpu_seconds_total", {{"pod", pod}});
    const double compute = m.Sum("gpuledger_container_compute_gpu_seconds_total", {{"pod", pod}});
    EXPECT_NEAR(allocated, metered / 4, 0.001 * metered / 4) << pod;
    EXPECT_GE(compute, 0) << pod;
    pods_compute += compute;
    auto info = m.Find("gpuledger_container_attribution_info", {{"pod", pod}});
    ASSERT_NE(info, nullptr);
    // Three consumers split by per-process samples: an estimate (docs/attribution.md).
    EXPECT_EQ(info->labels.at("compute_source"), "estimated:process-samples");
    // The worst error of that split on a real H200 (docs/attribution.md).
    EXPECT_EQ(info->labels.at("compute_error_band"), "1.11");
    EXPECT_EQ(info->labels.at("namespace"), "ml");
    EXPECT_FALSE(info->labels.at("pod_uid").empty());
  }
  EXPECT_NEAR(pods_compute, 0.6 * metered, 0.02 * 0.6 * metered + 0.6 * 0.1);
  EXPECT_EQ(m.Sum("gpuledger_agent_source_up", {{"source", "nvml"}}), 1);
  EXPECT_EQ(m.Sum("gpuledger_agent_source_up", {{"source", "kubelet"}}), 1);
  // The GPU's layout: its four advertised replicas.
  auto gpu = m.Find("gpuledger_device_info", {{"sharing_mode", "time-slicing"}});
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->labels.at("layout"), "4 replicas");
}

// Hopper measures each GPU instance itself (NVML GPM, through the stand-in's nvmlGpm*): the
// instance's compute is measured, within 2% of the scenario's duty over its 3 of 7 slices.
TEST_F(AgentTest, HopperMigInstancesAreMeasuredByGpm) {
  StartNode("mig-node");
  RunFor(4);
  Metrics m = Scrape();
  ExpectDeviceConserved(m);
  const double metered = m.Sum("gpuledger_device_metered_seconds_total");
  EXPECT_NEAR(m.Sum("gpuledger_container_allocated_gpu_seconds_total", {{"pod", "big-0"}}),
              metered * 3 / 7, 1e-3 * metered);
  auto info = m.Find("gpuledger_container_attribution_info", {{"pod", "big-0"}});
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->labels.at("compute_source"), "measured:gpm-instance-activity");
  EXPECT_EQ(info->labels.at("activity_source"), "measured:gpm");
  EXPECT_EQ(info->labels.at("memory_source"), "measured");
  // GPM's first sample is a baseline: one cycle (200 ms) of the metered time has no figure.
  const double compute = m.Sum("gpuledger_container_compute_gpu_seconds_total", {{"pod", "big-0"}});
  EXPECT_NEAR(compute, 0.5 * metered * 3 / 7, 0.02 * 0.5 * metered * 3 / 7 + 0.5 * 0.3 * 3 / 7);
  EXPECT_GT(m.Sum("gpuledger_container_sm_active_gpu_seconds_total", {{"pod", "big-0"}}), 0);
  EXPECT_NE(m.Find("gpuledger_device_info", {{"mig_profile", "3g.40gb"}}), nullptr);
  // The physical GPU's layout: its instances, the most compute slices first.
  EXPECT_NE(m.Find("gpuledger_device_info", {{"layout", "3g.40gb+2g.20gb"}}), nullptr);
}

// An A100 has no GPM and this node no dcgm-exporter: the instance's compute is its slice time
// while a process is present, estimated, and the rule says so.
TEST_F(AgentTest, AmpereMigIsEstimated) {
  StartNode("a100-mig-node");
  RunFor(3);
  Metrics m = Scrape();
  ExpectDeviceConserved(m);
  const double metered = m.Sum("gpuledger_device_metered_seconds_total");
  EXPECT_NEAR(m.Sum("gpuledger_container_allocated_gpu_seconds_total", {{"pod", "old-0"}}),
              metered * 3 / 7, 1e-3 * metered);
  auto info = m.Find("gpuledger_container_attribution_info", {{"pod", "old-0"}});
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->labels.at("compute_source"), "estimated:mig-presence");
  EXPECT_EQ(info->labels.at("activity_source"), "none");
  EXPECT_EQ(m.Sum("gpuledger_container_sm_active_gpu_seconds_total", {{"pod", "old-0"}}), 0);
}

// Cardinality (docs/agent.md): every series that names a (container, GPU) — counters, gauges,
// info and both histograms — at most 26 of them; 25 while the previous hour's peak is unknown.
TEST_F(AgentTest, At26SeriesAContainer) {
  StartNode("ts-node");
  RunFor(2);
  Metrics m = Scrape();
  std::map<std::string, int> per_container;
  for (const auto& [name, series] : m.by_name)
    for (const auto& s : series)
      if (s.labels.count("container") && s.labels.count("gpu_uuid"))
        ++per_container[s.labels.at("pod") + "/" + s.labels.at("gpu_uuid")];
  ASSERT_EQ(per_container.size(), 3u);
  // Two seconds in, the agent saw no hour before the current one (unless it just turned).
  const int previous =
      static_cast<int>(m.by_name.count("gpuledger_container_memory_previous_hour_peak_bytes") > 0);
  for (const auto& [key, n] : per_container) EXPECT_EQ(n, 25 + previous) << key;
  // The hour's peak is at least the last cycle's memory (constant here: the same).
  for (const char* pod : {"p20-0", "p30-0", "p10-0"}) {
    auto peak = m.Find("gpuledger_container_memory_peak_bytes", {{"pod", pod}});
    auto used = m.Find("gpuledger_container_memory_used_bytes", {{"pod", pod}});
    ASSERT_NE(peak, nullptr) << pod;
    ASSERT_NE(used, nullptr) << pod;
    EXPECT_GE(peak->value, used->value) << pod;
    EXPECT_GT(peak->value, 0) << pod;
  }
  const double hour = m.Sum("gpuledger_agent_hour_start_seconds");
  EXPECT_GT(hour, 0);
  EXPECT_EQ(std::fmod(hour, 3600), 0);
  // The buckets are the rightsizing steps: MIG compute slices and MIG memory slices (eighths).
  auto bucket = m.Find("gpuledger_container_compute_share_bucket",
                       {{"pod", "p20-0"}, {"le", "0.2857142857142857"}});
  EXPECT_NE(bucket, nullptr);
  auto eighth = m.Find("gpuledger_container_memory_usage_bytes_bucket",
                       {{"pod", "p20-0"}, {"le", "10737418240"}});
  EXPECT_NE(eighth, nullptr) << "an eighth of an A100-80GB, a 1g.10gb slice";
}

// Guardrails on the agent's real interfaces: a pod with no GPU request whose process runs on
// GPU 0 with every GPU visible (its environment read from /proc), beside a pod using its grant.
TEST_F(AgentTest, APodWithoutARequestOnAGpuIsFoundWithItsEvidence) {
  StartNode("guard-node");
  RunFor(1.5);
  Metrics m = Scrape();
  auto access = m.Find("gpuledger_finding", {{"kind", "unallocated-access"}, {"pod", "debug"}});
  ASSERT_NE(access, nullptr);
  EXPECT_EQ(access->labels.at("severity"), "critical");
  EXPECT_EQ(access->labels.at("namespace"), "ml");
  EXPECT_EQ(access->labels.at("container"), "main");
  EXPECT_EQ(access->value, 1);
  auto evidence =
      m.Find("gpuledger_finding_evidence_info", {{"kind", "unallocated-access"}, {"pod", "debug"}});
  ASSERT_NE(evidence, nullptr);
  EXPECT_NE(evidence->labels.at("evidence")
                .find("granted=none memory_bytes=2147483648 NVIDIA_VISIBLE_DEVICES=all"),
            std::string::npos)
      << evidence->labels.at("evidence");
  EXPECT_NE(m.Find("gpuledger_finding", {{"kind", "visible-devices-override"}, {"pod", "debug"}}),
            nullptr);
  EXPECT_EQ(m.Sum("gpuledger_finding"), 2) << "nothing about the pod that uses its grant";
  EXPECT_EQ(m.Sum("gpuledger_findings_total", {{"kind", "unallocated-access"}}), 1);
  EXPECT_GT(m.Sum("gpuledger_finding_first_seen_timestamp_seconds", {{"pod", "debug"}}), 1.7e9);
}

// No false positive on a clean node; every kind's counter is there, at 0.
TEST_F(AgentTest, ACleanNodeHasNoFindings) {
  StartNode("ts-node");
  RunFor(1.5);
  Metrics m = Scrape();
  EXPECT_EQ(m.by_name.count("gpuledger_finding"), 0u);
  ASSERT_EQ(m.by_name["gpuledger_findings_total"].size(),
            7u);  // every runtime kind, kernel-time-mismatch included
  EXPECT_EQ(m.Sum("gpuledger_findings_total"), 0);
}

// As on a real H200 (../shared/data/h200 run1-mps): NVML samples only the MPS server, a process
// of the device plugin's MPS control daemon pod. Its samples are the clients' work: the pod
// keeps its memory, no compute and no finding; the clients split the device's busy time.
TEST_F(AgentTest, MpsClientsAreSplitByThreadShare) {
  StartNode("mps-node");
  RunFor(3);
  Metrics m = Scrape();
  ExpectDeviceConserved(m);
  auto info = m.Find("gpuledger_container_attribution_info", {{"pod", "a-0"}});
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->labels.at("compute_source").rfind("estimated:mps-", 0), 0u)
      << info->labels.at("compute_source");
  const std::map<std::string, std::string> server = {{"namespace", "gpu-operator"},
                                                     {"container", "mps-control-daemon-ctr"}};
  auto server_info = m.Find("gpuledger_container_attribution_info", server);
  ASSERT_NE(server_info, nullptr);
  EXPECT_EQ(server_info->labels.at("compute_source"), "estimated:mps-server");
  EXPECT_EQ(server_info->labels.at("compute_error_band"), "0");
  EXPECT_EQ(info->labels.at("compute_error_band"), "0.6");
  EXPECT_EQ(m.Sum("gpuledger_container_compute_gpu_seconds_total", server), 0);
  EXPECT_GT(m.Sum("gpuledger_container_memory_byte_seconds_total", server), 0);
  const double busy = m.Sum("gpuledger_device_busy_seconds_total");
  const double clients = m.Sum("gpuledger_container_compute_gpu_seconds_total", {{"pod", "a-0"}}) +
                         m.Sum("gpuledger_container_compute_gpu_seconds_total", {{"pod", "b-0"}});
  EXPECT_GT(busy, 0);
  EXPECT_NEAR(clients, busy, 1e-6);
  EXPECT_EQ(m.Sum("gpuledger_findings_total"), 0);
}

TEST_F(AgentTest, WithoutNvmlTheAgentServesAndCountsTheError) {
  StartNode("ts-node", "/nonexistent/libnvidia-ml.so.1");
  RunFor(0.5);
  Metrics m = Scrape();
  EXPECT_EQ(m.Sum("gpuledger_agent_source_up", {{"source", "nvml"}}), 0);
  EXPECT_GT(m.Sum("gpuledger_agent_source_errors_total", {{"source", "nvml"}}), 0);
  EXPECT_EQ(m.Sum("gpuledger_device_metered_seconds_total"), 0);
}

TEST_F(AgentTest, HungNvmlNeverBlocksTheScrape) {
  StartNode("ts-node");
  RunFor(1);
  ASSERT_TRUE(WriteFile(node_->faults_file(), "hang all 1.5\n").ok());
  std::this_thread::sleep_for(300ms);  // the stand-in re-reads its fault file every 200 ms
  std::atomic<bool> done{false};
  std::thread cycle([&] {
    for (int i = 0; i < 3; ++i) collector_->Cycle();
    done = true;
  });
  std::this_thread::sleep_for(200ms);
  for (int i = 0; i < 10; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = collector_->Exposition();
    auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_FALSE(r->text.empty());
    EXPECT_LT(took, 100ms);
    std::this_thread::sleep_for(50ms);
  }
  fs::remove(node_->faults_file());
  cycle.join();
  // Cycles are bounded by the watchdog: three cycles of a hung NVML finish in seconds.
  EXPECT_TRUE(done);
  Metrics m = Scrape();
  EXPECT_GT(m.Sum("gpuledger_agent_source_errors_total", {{"source", "nvml"}, {"code", "TIMEOUT"}}),
            0);
  // Once the hung call returns, the source recovers on its own.
  std::this_thread::sleep_for(1600ms);
  RunFor(1.5);
  EXPECT_EQ(Scrape().Sum("gpuledger_agent_source_up", {{"source", "nvml"}}), 1);
}

TEST_F(AgentTest, LostGpuMidRunDegradesWithoutCrashing) {
  StartNode("ts-node");
  RunFor(1.5);
  const double before = Scrape().Sum("gpuledger_container_compute_gpu_seconds_total");
  ASSERT_TRUE(WriteFile(node_->faults_file(), "lost 0\n").ok());
  RunFor(1.5);
  Metrics m = Scrape();
  EXPECT_GT(
      m.Sum("gpuledger_agent_source_errors_total", {{"source", "nvml"}, {"code", "GPU_IS_LOST"}}),
      0)
      << collector_->Exposition()->text.substr(
             collector_->Exposition()->text.find("gpuledger_agent_source_errors_total"));
  // Counters never go backwards.
  EXPECT_GE(m.Sum("gpuledger_container_compute_gpu_seconds_total"), before);
  fs::remove(node_->faults_file());
  RunFor(2.5);
  ExpectDeviceConserved(Scrape());
}

TEST_F(AgentTest, KubeletAndCriOutagesKeepTheLastViewAndRecover) {
  StartNode("ts-node");
  RunFor(1);
  node_->kubelet().Stop();
  node_->cri().Stop();
  RunFor(1.5);
  Metrics down = Scrape();
  EXPECT_EQ(down.Sum("gpuledger_agent_source_up", {{"source", "kubelet"}}), 0);
  EXPECT_EQ(down.Sum("gpuledger_agent_source_up", {{"source", "cri"}}), 0);
  EXPECT_GT(down.Sum("gpuledger_agent_source_errors_total", {{"source", "kubelet"}}), 0);
  // The last good view keeps attributing to the pods, not to "unresolved".
  EXPECT_GT(down.Sum("gpuledger_container_allocated_gpu_seconds_total", {{"pod", "p20-0"}}), 0);
  EXPECT_EQ(
      down.Sum("gpuledger_container_compute_gpu_seconds_total", {{"namespace", "__unresolved__"}}),
      0);
  ASSERT_TRUE(node_->kubelet().Start(node_->kubelet_socket()).ok());
  ASSERT_TRUE(node_->cri().Start(node_->cri_socket()).ok());
  RunFor(1.5);
  Metrics up = Scrape();
  EXPECT_EQ(up.Sum("gpuledger_agent_source_up", {{"source", "kubelet"}}), 1);
  EXPECT_EQ(up.Sum("gpuledger_agent_source_up", {{"source", "cri"}}), 1);
  ExpectDeviceConserved(up);
}

TEST_F(AgentTest, ReusedPidAndVanishedProcessAreNeverDoubleCounted) {
  StartNode("ts-node");
  RunFor(1);
  // Move one pod's PID into another pod's container (a reused PID), and remove a third's /proc
  // entry while NVML still reports it (a process exiting between two samples).
  auto proc = fs::path(node_->host_root()) / "proc";
  // From here the world is not updated, so the edits stay.
  std::vector<fs::path> pids;
  for (const auto& e : fs::directory_iterator(proc)) pids.push_back(e.path());
  ASSERT_GE(pids.size(), 3u);
  const std::string other = *ReadFile((pids[1] / "cgroup").string());
  ASSERT_TRUE(WriteFile((pids[0] / "cgroup").string(), other).ok());
  fs::remove_all(pids[2]);
  for (int i = 0; i < 15; ++i) {
    collector_->Cycle();
    std::this_thread::sleep_for(100ms);
  }
  Metrics m = Scrape();
  ExpectDeviceConserved(m);
  EXPECT_GT(m.Sum("gpuledger_agent_unresolved_processes_total", {{"reason", "vanished"}}), 0);
}

// A bare-metal node (a shared GPU server, a Slurm node): no kubelet, so the same counters are
// kept per Unix user and systemd unit.
TEST_F(AgentTest, WithoutKubernetesAttributesToUsersAndUnits) {
  StartNode("bare-node");
  node_->kubelet().Stop();
  node_->cri().Stop();
  RunFor(3);
  Metrics m = Scrape();
  ExpectDeviceConserved(m);
  const double metered = m.Sum("gpuledger_device_metered_seconds_total");
  const double alice = m.Sum("gpuledger_container_compute_gpu_seconds_total",
                             {{"namespace", "__host__"}, {"pod", "user:alice"}});
  const double slurm = m.Sum("gpuledger_container_compute_gpu_seconds_total",
                             {{"namespace", "__host__"}, {"pod", "unit:slurmstepd.scope"}});
  // Together the device's busy time; each one's part is NVML's draw (see above).
  EXPECT_NEAR(alice + slurm, 0.6 * metered, 0.02 * 0.6 * metered + 0.6 * 0.1);
  EXPECT_GE(alice, 0);
  EXPECT_GE(slurm, 0);
  EXPECT_GT(m.Sum("gpuledger_container_memory_byte_seconds_total", {{"pod", "user:alice"}}), 0);
}

}  // namespace
}  // namespace gpuledger
