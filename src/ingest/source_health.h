#pragma once
// How the server's sources of samples fared, as it last saw them (/api/v1/sources, the web UI's
// banner): a failing scrape must not be invisible until a report shows a hole.

#include <cstdint>
#include <string>
#include <vector>

#include "common/units.h"

namespace gpuledger::ingest {

struct TargetHealth {
  std::string target;          // an agent's HOST:PORT, a Prometheus URL
  bool up = false;             // its last attempt succeeded
  std::int64_t failures = 0;   // failed attempts while it has been a target
  std::string last_error;      // the last failure's message while down; "" when up
  Micros last_success_us = 0;  // when it last answered (µs since the epoch); 0: never
};

struct SourcesHealth {
  std::string source;                 // "scrape", "prometheus"
  std::vector<TargetHealth> targets;  // in the order they are read
  std::string discovery_error;        // finding the targets failed (the last list kept); ""
};

}  // namespace gpuledger::ingest
