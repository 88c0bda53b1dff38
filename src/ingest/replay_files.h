#pragma once
// The `files=DIR` source: exposition snapshots replayed through an Ingestor.

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/time_util.h"
#include "http/gzip.h"
#include "ingest/ingestor.h"
#include "ingest/scrape_loop.h"

namespace gpuledger::ingest {

// `files=DIR`: exposition snapshots named <instance>@<unix-ms>.prom or .prom.gz (the instance
// may not contain '@' or '/'), replayed in time order (ties by name) through the ingestor,
// committed every `commit_every` files and at the end. Inference engines' scrapes (issue 63)
// are in DIR/engines, named <namespace>.<pod>@<unix-ms>.prom: each is booked to the engine
// `engines` names for that pod (its consumer and model, from the pods' annotations), or counted
// in unmatched_engine_files when none does. Malformed files fail the replay with
// the file name and line; a .prom.gz inflating past `max_bytes` fails it naming the file, and so
// does a name stamped outside 1970 .. 9999 or after `not_after_us`. Progress goes to `progress`
// when given.
struct ReplayStats {
  std::int64_t files = 0;  // node and engine snapshots replayed
  std::int64_t samples = 0;
  std::int64_t engine_files = 0;
  std::int64_t unmatched_engine_files = 0;  // of pods no engine target names: not booked
};
struct ReplayOptions {
  std::ostream* progress = nullptr;
  int commit_every = 500;
  std::size_t max_bytes = http::kMaxGunzipBytes;
  // A snapshot stamped later than this (the replay's start, plus a clock's skew) is refused:
  // a record of what happened cannot come from the future, and one dated decades ahead would
  // fill every hour up to it with rows.
  Micros not_after_us = kMaxInstantUs;
  std::vector<EngineTarget> engines;  // the pods that serve tokens (server::EngineTargets)
};
Result<ReplayStats> ReplayFiles(const std::string& dir, Ingestor& ingestor,
                                const ReplayOptions& options = {});

}  // namespace gpuledger::ingest
