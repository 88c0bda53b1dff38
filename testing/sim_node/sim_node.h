#pragma once
// `gpuledger-sim-node` (a test tool, never installed: it serves the fake kubelet and CRI of
// testing/fake_grpc and loads the NVML stand-in, so the production binary links neither): lays
// out one simulated node for a real agent — a procfs tree, the kubelet's pod log directories
// and container log links and the pods' cgroups under DIR/host, a kubelet PodResources and a
// CRI server on unix sockets under DIR, and the NVML stand-in's configuration — prints the
// exact `gpuledger agent` command to run against it (as the manifests run it: containers from
// the kubelet's files, no CRI socket), and
// keeps the node's world following the scenario's clock until killed. With --truth it also
// keeps the simulator's truth of what ran so far, for checking an agent's figures against.

#include <atomic>
#include <memory>
#include <ostream>
#include <string>

#include "common/result.h"
#include "common/units.h"

namespace gpuledger::fake {
class FakeKubelet;
class FakeCri;
}  // namespace gpuledger::fake

namespace gpuledger::simnode {

struct SimNodeOptions {
  std::string scenario;
  std::string node;
  std::string dir;
  std::string nvml_standin;  // path of the stand-in libnvidia-ml.so.1
  std::string agent_binary;  // what to print in the command (default: this binary)
  double refresh_seconds = 0.5;
  // Pods that ended stay listed by the kubelet (as real kubelets have been seen to do) with a
  // NOTREADY sandbox for this long: the agent must ignore them.
  double terminal_linger_seconds = 30;
  std::string standin_step = "1s";  // the stand-in's sampling step (tests use 100ms)
  // The truth of what ran on the node so far (demo --truth's CSV), rewritten whole (write to a
  // temporary file, then rename) at every Update() and on exit. Empty: not kept.
  std::string truth;
  // The same, cumulative, at the end of every simulated interval: rows
  // "at_unix_us,key,allocated_gpu_us,compute_gpu_us,memory_byte_us" appended as the intervals
  // end, at_unix_us being the wall time the stand-in stamps that interval's samples with. An
  // agent's figures cover the intervals that end after its first reading and up to its last:
  // the difference of two rows. Empty: not kept.
  std::string truth_log;
};

// One simulated node, running: its servers up, its procfs tree laid out. Update() follows the
// clock; tests drive it directly and can stop/start the servers to inject faults.
class SimNode {
 public:
  static Result<std::unique_ptr<SimNode>> Start(const SimNodeOptions& options);
  ~SimNode();
  // Follows the clock: the procfs tree, the kubelet's and runtime's lists, and the truth.
  Status Update();
  // Advances the truth (when kept) to now and writes it; Update() does this too.
  Status WriteTruth();
  fake::FakeKubelet& kubelet();
  fake::FakeCri& cri();
  std::string host_root() const;
  std::string kubelet_socket() const;
  std::string cri_socket() const;
  std::string standin_config() const;  // value for GPULEDGER_NVML_SCENARIO
  std::string faults_file() const;
  std::string AgentCommand() const;

 private:
  struct Impl;
  explicit SimNode(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Runs until `stop` becomes true (signal handlers set it). Exit code as the CLI's.
int RunSimNode(const SimNodeOptions& options, const std::atomic<bool>& stop, std::ostream& out,
               std::ostream& err);

}  // namespace gpuledger::simnode
