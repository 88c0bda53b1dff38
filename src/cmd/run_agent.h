#pragma once
// The agent's composition root: the only place that names its concrete sources.

#include <atomic>
#include <string>

namespace gpuledger::cmd {

struct AgentFlags {
  std::string node_name;
  std::string host_root = "/";
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  // The container runtime's CRI socket. Empty (the default): containers are mapped to pods from
  // the kubelet's own files (sources/cri/kubelet_files.h), with no socket that could start a
  // container (issue 62).
  std::string cri_socket;
  std::string listen = "0.0.0.0:9400";
  std::string interval = "1s";
  std::string nvml_timeout = "2s";
  // dcgm-exporter's /metrics (docs/dcgm.md), e.g. http://localhost:9400/metrics: SM, tensor and
  // DRAM activity where GPM gives none, and MIG instances' busy time. Empty: not used.
  std::string dcgm_exporter;
  // Guardrail policy YAML (docs/guardrails-policy.md): what is detected, thresholds, tolerance
  // windows, namespace exemptions. Empty: the defaults.
  std::string policy;
  // Where the in-process kernel-time tracers publish (issue 31, docs/agent.md), under
  // --host-root. Empty: not read.
  std::string kernel_time_dir = "/run/gpuledger/kerneltime";
};

// Starts in order — host files, NVML (wrapped by dcgm-exporter when given), kubelet, containers
// (the kubelet's files or CRI),
// collector thread, HTTP — and tears down in reverse when `stop` becomes true. Returns the exit
// code (2: bad flags).
int RunAgent(const AgentFlags& flags, const std::atomic<bool>& stop);

}  // namespace gpuledger::cmd
