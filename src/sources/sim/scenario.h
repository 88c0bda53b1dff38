#pragma once
// A simulator scenario, parsed and validated from YAML (docs/scenarios.md).

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/units.h"
#include "model/sharing.h"

namespace gpuledger::sim {

struct NodeSpec {
  std::string name;
  std::string gpu_model;              // catalog model name, e.g. "H100-80GB"
  int gpus = 1;
  Bytes memory_per_gpu_bytes = 0;     // defaults from the model when omitted
  SharingMode sharing = SharingMode::kExclusive;
  int replicas = 1;                   // time-slicing / MPS replicas per GPU
  std::vector<std::string> mig_layout;  // MIG: profiles per GPU, e.g. [3g.71gb, 2g.35gb]
  int total_slices = 7;               // MIG compute slices of the model (A30: 4)
  std::string pricing_class = "on-demand";
  std::string region;
  std::map<std::string, std::string> labels;
  bool has_dcgm = false;              // MIG instances then report their own activity
};

// ... the helper that implements the simulator completes this header (workloads, profiles,
// misbehaviour) and documents every field in docs/scenarios.md.

struct Scenario {
  std::string name;
  std::string cluster = "default";
  std::uint64_t seed = 1;
  Micros start_us = 0;
  Micros duration_us = 0;
  std::vector<NodeSpec> nodes;
  std::map<std::string, std::map<std::string, std::string>> namespace_labels;
};

// Errors name file, line and field: "demo.yaml:12: workloads[3].compute.duty: expected a
// number in [0, 1], got 'high'".
Result<Scenario> ParseScenario(std::string_view yaml_text, std::string_view file_name);
Result<Scenario> LoadScenarioFile(const std::string& path);

// The built-in demo scenario (what `gpuledger sim example` prints and `demo` runs).
std::string_view ExampleScenarioYaml();

}  // namespace gpuledger::sim
