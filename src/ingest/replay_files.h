#pragma once
// The `files=DIR` source: exposition snapshots replayed through an Ingestor.

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>

#include "common/result.h"
#include "common/time_util.h"
#include "http/gzip.h"
#include "ingest/ingestor.h"

namespace gpuledger::ingest {

// `files=DIR`: exposition snapshots named <instance>@<unix-ms>.prom or .prom.gz (the instance
// may not contain '@' or '/'), replayed in time order (ties by name) through the ingestor,
// committed every `commit_every` files and at the end. Malformed files fail the replay with
// the file name and line; a .prom.gz inflating past `max_bytes` fails it naming the file, and so
// does a name stamped outside 1970 .. 9999 or after `not_after_us`. Progress goes to `progress`
// when given.
struct ReplayStats {
  std::int64_t files = 0;
  std::int64_t samples = 0;
};
struct ReplayOptions {
  std::ostream* progress = nullptr;
  int commit_every = 500;
  std::size_t max_bytes = http::kMaxGunzipBytes;
  // A snapshot stamped later than this (the replay's start, plus a clock's skew) is refused:
  // a record of what happened cannot come from the future, and one dated decades ahead would
  // fill every hour up to it with rows.
  Micros not_after_us = kMaxInstantUs;
};
Result<ReplayStats> ReplayFiles(const std::string& dir, Ingestor& ingestor,
                                const ReplayOptions& options = {});

}  // namespace gpuledger::ingest
