#include "cmd/run_agent.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "agent/collector.h"
#include "agent/http_endpoint.h"
#include "common/clock.h"
#include "common/time_util.h"
#include "guardrails/policy_yaml.h"
#include "http/listen.h"
#include "io/file_reader.h"
#include "prometheus/http_get.h"
#include "sources/cri/kubelet_files.h"
#include "sources/cri/runtime.h"
#include "sources/dcgm/dcgm_source.h"
#include "sources/kerneltime/kernel_time_reader.h"
#include "sources/kubelet/pod_resources.h"
#include "sources/nvml/nvml_source.h"
#include "sources/procfs/proc_source.h"

namespace gpuledger::cmd {

int RunAgent(const AgentFlags& f, const std::atomic<bool>& stop) {
  auto interval = ParseDuration(f.interval);
  if (!interval || *interval < 10'000) {
    std::cerr << fmt::format("error: --interval '{}': expected a duration >= 10ms (e.g. 1s)\n",
                             f.interval);
    return 2;
  }
  auto deadline = ParseDuration(f.nvml_timeout);
  if (!deadline || *deadline <= 0) {
    std::cerr << fmt::format("error: --nvml-timeout '{}': expected a duration (e.g. 2s)\n",
                             f.nvml_timeout);
    return 2;
  }
  if (f.node_name.empty()) {
    std::cerr << "error: --node-name is required (the DaemonSet passes spec.nodeName)\n";
    return 2;
  }
  if (auto l = http::ParseListen(f.listen); !l) {
    std::cerr << "error: " << l.error().message << "\n";
    return 2;
  }
  std::optional<prometheus::HttpUrl> dcgm_url;
  if (!f.dcgm_exporter.empty()) {
    auto url = prometheus::ParseHttpUrl(f.dcgm_exporter);
    if (!url) {
      std::cerr << "error: --dcgm-exporter " << url.error().message << "\n";
      return 2;
    }
    dcgm_url = std::move(*url);
  }
  guardrails::Policy policy = guardrails::DefaultPolicy();
  if (!f.policy.empty()) {
    auto loaded = guardrails::LoadPolicyFile(f.policy);
    if (!loaded) {
      std::cerr << "error: --policy " << loaded.error().message << "\n";
      return 2;
    }
    policy = std::move(*loaded);
  }
  // One clock for the whole agent: wall time for timestamps (and NVML's), monotonic time for
  // every length, so a step of the wall clock is counted, never metered (common/clock.h).
  SystemClock clock;
  auto files = MakePosixFileReader(f.host_root);
  procfs::ProcSource procs(*files);
  std::unique_ptr<sources::GpuSource> gpus = nvml::OpenNvmlSource(f.nvml_library, *deadline, clock);
  if (dcgm_url) {
    // The fetch runs on the collection thread: its timeout bounds what a hung exporter costs a
    // cycle (once per refresh, see dcgm_source.h), and stays under the interval.
    const Micros timeout = std::min<Micros>(kMicrosPerSecond, *interval / 2);
    sources::dcgm::DcgmOptions dcgm;
    dcgm.url = dcgm_url->text;
    gpus = std::make_unique<sources::dcgm::DcgmGpuSource>(
        std::move(gpus), [url = *dcgm_url, timeout] { return prometheus::HttpGet(url, timeout); },
        dcgm);
  }
  std::cerr << "gpuledger agent: " << gpus->Describe() << "\n";

  // Kubernetes is optional: without a kubelet socket the agent attributes to Unix users and
  // systemd units. A socket that appears later (kubelet starting after us) is picked up.
  auto kubelet = kubelet::MakeGrpcPodResourcesClient(f.pod_resources_socket);
  std::unique_ptr<cri::RuntimeClient> runtime;
  if (f.cri_socket.empty()) {
    runtime = cri::MakeKubeletFilesRuntime(*files);
    std::cerr << "gpuledger agent: containers from the kubelet's files under "
              << files->Resolve("/var/log") << ", running pods from " << files->Resolve("/sys/fs/cgroup")
              << "\n";
  } else {
    runtime = cri::MakeGrpcRuntimeClient(f.cri_socket);
    std::cerr << "gpuledger agent: containers from CRI at " << f.cri_socket << "\n";
  }
  const bool kube = std::filesystem::exists(f.pod_resources_socket);
  std::cerr << (kube ? "gpuledger agent: kubelet PodResources at " + f.pod_resources_socket
                     : "gpuledger agent: no kubelet socket at " + f.pod_resources_socket +
                           ": attributing to Unix users and systemd units")
            << "\n";

  agent::CollectorOptions options;
  options.node = f.node_name;
  options.policy = std::move(policy);
  std::unique_ptr<kerneltime::KernelTimeReader> kernel_time;
  if (!f.kernel_time_dir.empty())
    kernel_time = std::make_unique<kerneltime::KernelTimeReader>(*files, f.kernel_time_dir);
  agent::Collector collector(options, *gpus, procs, kubelet.get(), runtime.get(), clock,
                             kernel_time.get());
  collector.Cycle();  // baseline: the first /metrics already has the device list

  auto http = agent::HttpEndpoint::Bind(f.listen, collector, 3 * *interval + 10 * kMicrosPerSecond);
  if (!http) {
    std::cerr << "error: " << http.error().message << "\n";
    return http.error().code == ErrorCode::kInvalidArgument ? 2 : 1;  // a port in use: 2
  }
  std::cout << fmt::format("gpuledger agent: serving http://{}:{}/metrics\n",
                           http::ParseListen(f.listen)->first, (*http)->port())
            << std::flush;

  std::thread loop([&] {
    auto next = std::chrono::steady_clock::now();
    while (!stop.load()) {
      next += std::chrono::microseconds(*interval);
      std::this_thread::sleep_until(next);
      if (stop.load()) break;
      collector.Cycle();
      // After a long stall (a hung NVML call), restart the schedule instead of bursting.
      if (std::chrono::steady_clock::now() > next + std::chrono::microseconds(*interval))
        next = std::chrono::steady_clock::now();
    }
  });
  std::thread server([&] { (*http)->Serve(); });
  while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  (*http)->Stop();
  server.join();
  loop.join();
  return 0;
}

}  // namespace gpuledger::cmd
