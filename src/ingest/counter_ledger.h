#pragma once
// Counters to ledger: the exact-delta engine every ingestion path feeds (design sections 2, 7).
//
// Feed it each target's samples in time order (per target). For every counter series it keeps
// the last value and adds the delta to the hours the interval covers: a reset (value lower than
// the last) counts the new value as the delta since the reset; never increase()-style
// extrapolation. An interval spanning an hour boundary is split by time. A missed scrape loses
// resolution, never GPU-seconds: the next delta carries the total. Time the agent did not
// measure stays `unmetered` (hour - the agent's own metered counter).
//
// It turns the agent's counters (gpuledger_device_*_seconds_total, gpuledger_device_energy_
// joules_total, gpuledger_device_unattributed_memory_byte_seconds_total, gpuledger_container_*_
// total, gpuledger_device_info, gpuledger_container_attribution_info) into LedgerHour rows. Every
// value is first turned back into the agent's integer (GPU-µs, mJ, KiB-s; exact within the
// bound of common/counter_units.h) and every delta is an integer: a delta that spans an hour
// boundary is split by the largest remainder over the time in each hour, so the pieces sum to
// it exactly. Each (hour, physical GPU) is closed by attribution::CloseDeviceHour, the one
// closing step, so every hour conserves (Σ allocated + unallocated == metered, Σ compute +
// unattributed == busy, energy). Prices are left 0: cost::PriceHours prices rows.
//
// Restart safety: State() is a serialisable snapshot (last values, open-hour accumulators);
// Restore() resumes from it. Writing an hour's rows is idempotent (they replace), so replaying
// samples already fed after a crash re-writes the same rows and counts nothing twice.
//
// Not thread-safe; one owner.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "ingest/sample.h"
#include "model/ledger.h"

namespace gpuledger::ingest {

class CounterLedger {
 public:
  // `describe` gives owner/labels for a consumer (metadata); `cluster` names the cluster.
  CounterLedger(std::string cluster, std::function<ConsumerInfo(const ConsumerRef&)> describe);

  // Precondition: per instance, scrapes come in increasing at_us (older ones are ignored and
  // counted in ignored_scrapes()).
  void Feed(const TargetScrape& scrape);

  // Every hour that starts before `before_us` and has data, with its consumers; the hours stay
  // open (a late sample re-opens and re-writes its hour) until Forget(before_us).
  std::vector<LedgerHour> Hours(Micros before_us) const;
  void Forget(Micros before_us);

  // Agents first seen that started at or after `since_us` (their
  // gpuledger_agent_start_time_seconds) count from zero at their start instead of taking the
  // first scrape as a baseline: their whole life was observed. Default: never (every first
  // scrape is a baseline, as Prometheus treats a new series). Kept in State().
  void ObserveSince(Micros since_us);

  std::string State() const;                    // JSON
  Status Restore(std::string_view state_json);  // kInvalidArgument when it is not ours

  // Every (hour, gpu) row changed since the last call (all open ones after Restore), for the
  // caller to write: rows hold the whole hour, so writing them replaces, never adds.
  std::vector<LedgerHour> TakeTouched();

  std::int64_t ignored_scrapes() const;
  std::int64_t resets() const;
  // Parts of deltas that fell into hours already forgotten (an instance silent for longer than
  // the caller keeps hours open): not booked, counted here.
  std::int64_t late_dropped() const;
  Micros latest_us() const;  // the newest at_us fed (INT64_MIN before any)

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace gpuledger::ingest
