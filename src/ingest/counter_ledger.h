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
// Activity (gpuledger_container_{sm_active,sm_occupancy,tensor_active,dram_active}_gpu_seconds_
// total) goes through the same exact deltas into UsageRow::activity; attribution_info's
// activity_source ("<quality>[:<rule>]", "none") and share_source labels become the row's
// activity_quality / activity_rule and share_source. Agents that export neither (older ones)
// give zero activity, Quality::kNone and an empty share_source.
//
// Rightsizing inputs: the `_bucket` counters of gpuledger_container_compute_share and
// gpuledger_container_memory_usage_bytes go through the same exact deltas, bucket by bucket,
// into UsageRow::histogram (counts per bucket of the hour; compute buckets known by their
// bounds, memory buckets, bytes of each GPU, by rank; other layouts are skipped and counted).
// Peak memory is the largest of the memory gauge at each scrape and the agent's hour peaks
// (gpuledger_container_memory_{,previous_hour_}peak_bytes, of the hour its
// gpuledger_agent_hour_start_seconds names): exact with agents that export them.
//
// Restart safety: State() is a serialisable snapshot (last values, open-hour accumulators);
// Restore() resumes from it. Writing an hour's rows is idempotent (they replace), so replaying
// samples already fed after a crash re-writes the same rows and counts nothing twice. The same
// state also comes in parts (PendingState / RestoreParts), one per instance and per open
// (hour, GPU), so a store commits only what changed since its last commit.
//
// Bounded: hours older than Forget()'s horizon are dropped; Prune() drops instances (agents)
// and, within the others, devices and attribution entries not seen since its horizon, so a
// cluster whose agents restart and move (new pod IPs, new instance names) holds only the
// agents of the retention window. footprint() says how much is held.
//
// Not thread-safe; one owner.

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "ingest/sample.h"
#include "model/ledger.h"

namespace gpuledger::ingest {

// Every series name CounterLedger::Feed reads: counters, info series and gauges. A source that
// fetches series by name (PromQL ingestion) queries these, so its rows equal a scrape's.
const std::vector<std::string>& FedSeriesNames();

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

  // Drops every instance whose last scrape is before `before_us`, and in the others the
  // devices (gpuledger_device_info) and attribution entries (gpuledger_container_attribution_
  // info) last seen before it. An instance seen again after it was dropped is a new agent: its
  // first scrape is a baseline, or counts from its start (ObserveSince). Open hours stay.
  void Prune(Micros before_us);

  std::string State() const;                    // JSON
  Status Restore(std::string_view state_json);  // kInvalidArgument when it is not ours

  // The state in parts, each JSON: "engine" (counters and horizons), "instance/<name>" per
  // instance, "hour/<hour_us>/<gpu uuid>" per open (hour, GPU). Together they are State().
  struct StateDelta {
    std::map<std::string, std::string> put;  // part name -> JSON
    std::set<std::string> erase;             // parts that no longer exist
    bool empty() const { return put.empty() && erase.empty(); }
  };
  // The parts changed since the last StateSaved() (after Restore(): every part; after
  // RestoreParts(): none). Writing them over the previously saved parts gives the current state.
  StateDelta PendingState() const;
  void StateSaved();  // the caller stored the last PendingState()
  // Resumes from parts as PendingState() named them. kInvalidArgument for a part this build
  // cannot read; its message starts with the part's name, after `name_prefix`, quoted:
  // "'<name_prefix><part>': <why>".
  Status RestoreParts(const std::map<std::string, std::string>& parts,
                      std::string_view name_prefix = "");

  // Every (hour, gpu) row changed since the last call (all open ones after Restore), for the
  // caller to write: rows hold the whole hour, so writing them replaces, never adds.
  std::vector<LedgerHour> TakeTouched();
  // Marks rows taken but not written (a failed store write) as touched again.
  void Retouch(const std::vector<LedgerHour>& rows);

  // What the engine holds: bounded by the agents of the retention window and the open hours.
  struct Footprint {
    std::int64_t instances = 0, series = 0, devices = 0, attribution = 0, hours = 0;
  };
  Footprint footprint() const;

  std::int64_t ignored_scrapes() const;
  std::int64_t resets() const;
  // Parts of deltas that fell into hours already forgotten (an instance silent for longer than
  // the caller keeps hours open): not booked, counted here.
  std::int64_t late_dropped() const;
  // Histogram bucket samples not read: a layout other than the agent's (docs/agent.md).
  std::int64_t skipped_buckets() const;
  // Counter samples NaN, infinite or negative: skipped (the last good value kept), counted here.
  std::int64_t skipped_values() const;
  Micros latest_us() const;  // the newest at_us fed (INT64_MIN before any)

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace gpuledger::ingest
