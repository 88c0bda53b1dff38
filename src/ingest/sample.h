#pragma once
// The unit of ingestion: one target's samples at one instant, from a scrape of an agent, from a
// Prometheus-compatible HTTP API (raw samples), or from an exposition file.

#include <string>
#include <vector>

#include "common/units.h"
#include "prometheus/sample.h"

namespace gpuledger::ingest {

// Ingestion speaks Prometheus samples.
using prometheus::Labels;
using prometheus::Sample;

// All the samples of one target (one agent, identified by `instance`) observed at one instant.
struct TargetScrape {
  std::string instance;  // "10.0.0.7:9400", or the node name: identifies the counter stream
  Micros at_us = 0;      // when the values were observed (scrape time, or sample timestamp)
  std::vector<Sample> samples;
};

}  // namespace gpuledger::ingest
