#pragma once
// Prometheus samples as the ingestion paths see them: from a scrape of an agent, from a
// Prometheus-compatible HTTP API (raw samples), or from exposition files.

#include <string>
#include <utility>
#include <vector>

#include "common/units.h"

namespace gpuledger::ingest {

// Labels sorted by name; no duplicate names.
using Labels = std::vector<std::pair<std::string, std::string>>;

struct Sample {
  std::string name;   // metric name, e.g. "gpuledger_container_compute_gpu_seconds_total"
  Labels labels;
  double value = 0;
};

// All the samples of one target (one agent, identified by `instance`) observed at one instant.
struct TargetScrape {
  std::string instance;   // "10.0.0.7:9400", or the node name: identifies the counter stream
  Micros at_us = 0;       // when the values were observed (scrape time, or sample timestamp)
  std::vector<Sample> samples;
};

}  // namespace gpuledger::ingest
