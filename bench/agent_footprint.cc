// Agent footprint, part 1: CPU per collection cycle outside NVML, for 8 GPUs and 200 containers.
//
// A real simulated node (procfs tree, fake kubelet and CRI servers) and the NVML stand-in give
// one recorded GpuReading; the benchmark then replays it through everything the agent does
// after NVML answers: /proc lookups of 200 PIDs, the Kubernetes join, attribution, counters and
// the pre-rendered exposition (text + gzip). Part 2 (peak RSS of the real agent process) is
// bench/agent_footprint.sh, which also runs this program.
#include <benchmark/benchmark.h>

#include <fmt/format.h>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "agent/collector.h"
#include "common/clock.h"
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

// Replays one reading with advancing timestamps: NVML's cost is excluded by construction.
class ReplaySource : public sources::GpuSource {
 public:
  explicit ReplaySource(sources::GpuReading r) : r_(std::move(r)) {}
  Result<sources::GpuReading> Read() override {
    sources::GpuReading out = r_;
    const Micros dt = r_.end_us - r_.start_us;
    out.start_us = r_.start_us + n_ * dt;
    out.end_us = out.start_us + dt;
    ++n_;
    return out;
  }
  std::string Describe() const override { return "replay"; }

 private:
  sources::GpuReading r_;
  std::int64_t n_ = 0;
};

std::string Scenario() {
  // 8 GPUs shared by fraction (0.04 each, as HAMi or gpu_milli would): 25 pods per GPU,, 200
  // single-container pods with mixed duty and memory.
  std::string yaml = R"(
name: footprint
start: "2026-11-23T00:00:00Z"
duration: 24h
nodes:
  - {name: big, gpu_model: H100-80GB, gpus: 8, sharing: fractional}
workloads:
)";
  for (int i = 0; i < 200; ++i)
    yaml += fmt::format(
        "  - {{namespace: ns{}, name: w{}, fraction: 0.04, compute: {{profile: constant, duty: "
        "{:.3f}}}, "
        "memory: {{bytes: {}MiB}}}}\n",
        i % 10, i, 0.001 + (i % 7) * 0.005, 256 + (i % 5) * 128);
  return yaml;
}

void BM_CycleOutsideNvml(benchmark::State& state) {
  const fs::path dir =
      fs::temp_directory_path() / ("gpuledger-bench-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  (void)WriteFile((dir / "scenario.yaml").string(), Scenario());
  simnode::SimNodeOptions o;
  o.scenario = (dir / "scenario.yaml").string();
  o.node = "big";
  o.dir = (dir / "node").string();
  auto node = simnode::SimNode::Start(o);
  if (!node.ok()) {
    state.SkipWithError(node.error().message.c_str());
    return;
  }
  ::setenv("GPULEDGER_NVML_SCENARIO", (*node)->standin_config().c_str(), 1);
  SystemClock clock;
  auto nvml = nvml::OpenNvmlSource(gpuledger::test_paths::kNvmlStandin, 2'000'000, clock);
  (void)nvml->Read();
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  auto reading = nvml->Read();
  if (!reading.ok() || reading->processes.size() < 200) {
    state.SkipWithError("the stand-in gave no reading of 200 processes");
    return;
  }
  ReplaySource replay(*reading);
  auto files = MakePosixFileReader((*node)->host_root());
  procfs::ProcSource procs(*files);
  auto kubelet = kubelet::MakeGrpcPodResourcesClient((*node)->kubelet_socket());
  auto runtime = cri::MakeGrpcRuntimeClient((*node)->cri_socket());
  agent::CollectorOptions options;
  options.node = "big";
  agent::Collector collector(options, replay, procs, kubelet.get(), runtime.get(), clock);
  collector.Cycle();
  for (auto _ : state) collector.Cycle();
  state.counters["gpus"] = static_cast<double>(reading->gpus.size());
  state.counters["processes"] = static_cast<double>(reading->processes.size());
  state.counters["exposition_kib"] = collector.Exposition()->text.size() / 1024.0;
  node->reset();
  fs::remove_all(dir);
}
// CPU time is what the target is about; real time shows the effect of the 2-core machine.
BENCHMARK(BM_CycleOutsideNvml)
    ->Unit(benchmark::kMicrosecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

}  // namespace
}  // namespace gpuledger

BENCHMARK_MAIN();
