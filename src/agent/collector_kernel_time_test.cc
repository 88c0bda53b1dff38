// The collector with the kernel-time reader (issue 31) on a simulated time-sliced node: three
// pods share an A100, NVML's simulated per-process samples alias as the real H200's did, and
// each pod's tracer publishes its true kernel time (the simulator's truth) in the file the
// agent reads. The agent's per-container compute then equals the truth to the µs per cycle
// and says `measured:kernel-time`; one pod without a file gets the remainder.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "agent/collector.h"
#include "common/clock.h"
#include "io/file_util.h"
#include "prometheus/exposition_parser.h"
#include "sim/scenario.h"
#include "sim/simulated_node.h"
#include "sim/simulator.h"
#include "sources/kerneltime/kernel_time_reader.h"
#include "sources/kerneltime/publication.h"
#include "sources/procfs/proc_source.h"
#include "temp_dir.h"

namespace gpuledger::agent {
namespace {

constexpr Micros kS = kMicrosPerSecond;

constexpr char kScenario[] = R"(
name: kernel-time
start: "2026-11-23T00:00:00Z"
duration: 2h
seed: 31
nodes:
  - {name: n1, gpu_model: A100-80GB, gpus: 1, sharing: time-slicing, replicas: 4}
workloads:
  - {namespace: ml, name: a, compute: {profile: periodic, period: 1s, on: 200ms, duty: 1}, memory: {bytes: 2GiB}}
  - {namespace: ml, name: b, compute: {profile: periodic, period: 1s, on: 400ms, duty: 1}, memory: {bytes: 2GiB}}
  - {namespace: ml, name: c, compute: {profile: bursty, mean_duty: 0.2, burst: 5s}, memory: {bytes: 2GiB}}
)";

struct Outcome {
  std::map<std::string, double> compute_s;    // per pod, from the exposition
  std::map<std::string, std::string> source;  // per pod, compute_source
  std::map<std::string, double> truth_s;
  std::set<std::string> mismatched;  // pods with an open kernel-time-mismatch finding
  double files_read = 0;             // gpuledger_agent_kernel_time_files_total{result="read"}
};

// Runs the scenario with the pods of the workloads in `publishing` publishing their true kernel
// time.
Outcome RunNode(const std::set<std::string>& publishing, const std::string& liar = "") {
  auto scenario = sim::ParseScenario(kScenario, "kt.yaml");
  EXPECT_TRUE(scenario.ok()) << scenario.error().message;
  sim::Simulator simulator(*scenario, 60 * kS);
  ManualClock clock(scenario->start_us, scenario->start_us);
  sim::SimulatedNode world("n1");
  procfs::ProcSource procs(world);
  testing::TempDir root("gpuledger-kt-collector");
  auto files = MakePosixFileReader(root.path().string());
  kerneltime::KernelTimeReader reader(*files);
  Collector collector(CollectorOptions{"n1", 0, 3600 * kS, true}, world, procs, &world, &world,
                      clock, &reader);
  simulator.Run([&](const NodeSnapshot& snap) {
    // Each pod's tracer: its cumulative kernel time so far (the simulator's truth).
    for (const ProcessObservation& p : snap.processes) {
      if (!p.consumer || !publishing.count(p.consumer->pod.substr(0, 1))) continue;
      kerneltime::Publication pub;
      pub.pid = p.pid;
      pub.started_unix_ns = 1;
      // A liar claims it ran nothing, so that its time is split among the others.
      const double truth_us = p.consumer->pod.substr(0, 1) == liar
                                  ? 0
                                  : simulator.truth().at(*p.consumer).compute_gpu_us;
      pub.devices.push_back({p.device.value, static_cast<std::uint64_t>(truth_us * 1000), 1, 0});
      kerneltime::FileLayout f{};
      kerneltime::WritePublication(pub, f);
      const auto dir = root.path() / "run/gpuledger/kerneltime" / p.consumer->pod_uid.value;
      std::filesystem::create_directories(dir);
      EXPECT_TRUE(WriteFile((dir / std::to_string(p.pid)).string(),
                            std::string(reinterpret_cast<const char*>(&f), sizeof f))
                      .ok());
    }
    clock.Set(snap.end_us);
    world.Show(snap);
    collector.Cycle();
  });
  Outcome o;
  auto parsed = prometheus::ParseExposition(collector.Exposition()->text);
  EXPECT_TRUE(parsed) << parsed.error().message;
  for (const auto& s : parsed->samples) {
    std::string pod, source;
    for (const auto& [k, v] : s.labels) {
      if (k == "pod") pod = v;
      if (k == "compute_source") source = v;
    }
    if (pod.empty() || pod.find("nvidia") != std::string::npos) continue;
    if (s.name == "gpuledger_container_compute_gpu_seconds_total") o.compute_s[pod] = s.value;
    if (s.name == "gpuledger_container_attribution_info") o.source[pod] = source;
    for (const auto& [k, v] : s.labels)
      if (s.name == "gpuledger_finding" && k == "kind" && v == "kernel-time-mismatch")
        o.mismatched.insert(pod);
  }
  for (const auto& [ref, t] : simulator.truth()) o.truth_s[ref.pod] = t.compute_gpu_us / 1e6;
  for (const auto& s : parsed->samples)
    if (s.name == "gpuledger_agent_kernel_time_files_total" && s.labels.size() == 1 &&
        s.labels[0].second == "read")
      o.files_read = s.value;
  return o;
}

TEST(CollectorKernelTime, PublishedKernelTimeMakesTimeSlicedComputeExact) {
  const Outcome estimated = RunNode({});
  const Outcome measured = RunNode({"a", "b", "c"});
  double worst_estimate = 0;
  for (const auto& [pod, truth] : measured.truth_s) {
    ASSERT_TRUE(measured.compute_s.count(pod)) << pod;
    // The first cycle is each tracer's baseline: at most one 60 s interval of the NVML
    // estimate, the rest exact to the µs per cycle.
    EXPECT_NEAR(measured.compute_s.at(pod), truth, 60 + 120 * 1e-6) << pod;
    EXPECT_EQ(measured.source.at(pod), "measured:kernel-time") << pod;
    worst_estimate =
        std::max(worst_estimate, std::abs(estimated.compute_s.at(pod) - truth) / truth);
  }
  std::cout << "[ kernel-time ] NVML estimate worst " << worst_estimate * 100
            << "% off; kernel time within the first cycle\n";
  EXPECT_GT(worst_estimate, 0.05);  // the aliasing the tracer is for
  EXPECT_EQ(estimated.files_read, 0);
  EXPECT_EQ(measured.files_read, 3 * 120);  // three pods, 120 one-minute cycles

  // c publishes nothing: a and b keep their kernel time, c gets what the busy time leaves.
  const Outcome partial = RunNode({"a", "b"});
  for (const auto& [pod, truth] : partial.truth_s) {
    const bool silent = pod.rfind("c", 0) == 0;
    EXPECT_EQ(partial.source.at(pod),
              silent ? "measured:kernel-time-remainder" : "measured:kernel-time")
        << pod;
    EXPECT_NEAR(partial.compute_s.at(pod), truth, 120) << pod;
  }

  // c claims no kernel time while NVML sees it run: for the five-minute tolerance its time goes
  // to a and b, then the finding opens and c falls back to the estimate of what is left.
  const Outcome lied = RunNode({"a", "b", "c"}, "c");
  for (const auto& [pod, truth] : lied.truth_s) {
    const bool liar = pod.rfind("c", 0) == 0;
    EXPECT_EQ(lied.mismatched.count(pod), liar ? 1u : 0u) << pod;
    EXPECT_EQ(lied.source.at(pod), liar ? "measured:kernel-time-remainder" : "measured:kernel-time")
        << pod;
    // At most the tolerance's six cycles of c's time went elsewhere.
    EXPECT_NEAR(lied.compute_s.at(pod), truth, 6 * 60) << pod;
  }
}

}  // namespace
}  // namespace gpuledger::agent
