// gpuledger-sim-node: one simulated node for a real `gpuledger agent` (sim_node.h). A test
// tool built beside the stand-in and the agent, so it knows where both are by default.

#include <atomic>
#include <csignal>
#include <iostream>

#include <CLI/CLI.hpp>

#include "sim_node/sim_node.h"
#include "test_paths.h"

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

}  // namespace

int main(int argc, char** argv) {
  using gpuledger::simnode::RunSimNode;
  using gpuledger::simnode::SimNodeOptions;
  CLI::App app{"gpuledger-sim-node: lay out one simulated node for a real agent"};
  SimNodeOptions node;
  node.nvml_standin = gpuledger::test_paths::kNvmlStandin;
  node.agent_binary = gpuledger::test_paths::kGpuledgerBin;
  app.add_option("--scenario", node.scenario, "scenario YAML")->required();
  app.add_option("--node", node.node, "node name in the scenario")->required();
  app.add_option("--dir", node.dir, "directory for the node's procfs tree and sockets")->required();
  app.add_option("--nvml-standin", node.nvml_standin, "the NVML stand-in library")
      ->envname("GPULEDGER_NVML_STANDIN")
      ->capture_default_str();
  app.add_option("--agent-binary", node.agent_binary,
                 "the gpuledger binary the printed command runs")
      ->capture_default_str();
  app.add_option("--standin-step", node.standin_step,
                 "the stand-in's simulation step: one NVML sample per step")
      ->capture_default_str();
  app.add_option("--truth", node.truth,
                 "keep the simulator's truth of what ran so far in this CSV (demo --truth's "
                 "columns), rewritten as the node runs and on exit");
  app.add_option("--truth-log", node.truth_log,
                 "append the cumulative truth at the end of every simulated interval "
                 "(at_unix_us first) to this CSV");
  CLI11_PARSE(app, argc, argv);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);
  return RunSimNode(node, g_stop, std::cout, std::cerr);
}
