#pragma once
// A Prometheus sample as every reader of metrics sees it: parsed from an agent's exposition or
// a file, or read from a Prometheus-compatible HTTP API.

#include <string>
#include <utility>
#include <vector>

namespace gpuledger::prometheus {

// Labels sorted by name; no duplicate names.
using Labels = std::vector<std::pair<std::string, std::string>>;

struct Sample {
  std::string name;  // metric name, e.g. "gpuledger_container_compute_gpu_seconds_total"
  Labels labels;
  double value = 0;
};

}  // namespace gpuledger::prometheus
