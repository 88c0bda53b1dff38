#pragma once
// Inference engines' token counters to exact hourly rows (issue 63): the same rules as the
// agent's counters (ingest/counter_ledger.h), for the series ingest/token_series.h names.
//
// Feed it each engine's scrapes in time order. Per series it keeps the last value and adds the
// delta to the hours the interval covers, split by the largest remainder over the time in each
// hour, so the pieces sum to it exactly; never increase()-style extrapolation. A counter lower
// than its last value was reset: the new value is the delta since the reset. An engine whose
// process_start_time_seconds changed restarted: every series counts from zero at the new
// start, so a restart is exact even where the new values already passed the old ones. A missed
// scrape loses resolution, never tokens: the next delta carries the total. An engine's first
// scrape is a baseline, unless the engine started at or after ObserveSince(): its whole life
// was observed, and its first values count from its start.
//
// Bounded: Forget() drops hours before its horizon; Prune() drops engines not scraped since.
// State() / Restore() carry everything across a restart of the server. Not thread-safe.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "ingest/sample.h"
#include "model/tokens.h"

namespace gpuledger::ingest {

// One scrape of an inference engine's metrics endpoint (a pod that opted in).
struct EngineScrape {
  ConsumerRef consumer;  // the pod and container that serve the endpoint
  // The model to book under where the engine's series name none (TGI serves one model and
  // labels nothing): the pod's gpuledger.io/model annotation; "" when not given.
  std::string model;
  Micros at_us = 0;
  std::vector<Sample> samples;
};

class TokenLedger {
 public:
  explicit TokenLedger(std::string cluster);

  // Engines that started at or after `since_us` count from their start (see above). Default:
  // never.
  void ObserveSince(Micros since_us);

  // Precondition per consumer: increasing at_us (an older scrape is ignored and counted).
  void Feed(const EngineScrape& scrape);

  // The rows of every hour that starts before `before_us`, in TokenHour::Key() order.
  std::vector<TokenHour> Hours(Micros before_us) const;
  // The rows changed since the last call, for the caller to write: each holds its whole hour,
  // so writing it replaces, never adds.
  std::vector<TokenHour> TakeTouched();
  // Rows taken but not written (a failed store write): touched again.
  void Retouch(const std::vector<TokenHour>& rows);
  // Drops the hours that start before `before_us`; a later delta into them is counted in
  // late_dropped(), not booked.
  void Forget(Micros before_us);
  // Drops the engines last scraped before `before_us`; one scraped again is new (a baseline).
  void Prune(Micros before_us);

  std::string State() const;                    // JSON
  Status Restore(std::string_view state_json);  // kInvalidArgument when it is not ours

  struct Footprint {
    std::int64_t engines = 0, series = 0, rows = 0;
  };
  Footprint footprint() const;
  std::int64_t ignored_scrapes() const;
  std::int64_t resets() const;
  std::int64_t restarts() const;
  std::int64_t late_dropped() const;
  std::int64_t skipped_values() const;  // NaN, infinite, negative or past 2^53: not counters
  Micros latest_us() const;             // the newest at_us fed (INT64_MIN before any)

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace gpuledger::ingest
