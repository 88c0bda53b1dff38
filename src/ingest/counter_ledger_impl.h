#pragma once
// CounterLedger's state and the steps of its engine, shared by its files: the deltas of each
// scrape spread over the hours they cover and the hours closed (counter_ledger.cc), the state
// saved and restored whole or in parts (counter_ledger_state.cc). Nothing else includes it.

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "common/result.h"
#include "ingest/agent_series.h"
#include "ingest/counter_ledger.h"
#include "ingest/counter_state_codec.h"
#include "model/usage.h"

namespace gpuledger::ingest {

using json = state::json;

struct CounterLedger::Impl {
  using SeriesState = state::SeriesState;
  using DeviceFacts = state::DeviceFacts;
  using Sources = state::Sources;
  using InstanceState = state::InstanceState;
  using ConsumerAcc = state::ConsumerAcc;
  using DeviceAcc = state::DeviceAcc;
  using HourKey = state::HourKey;

  std::string cluster;
  std::function<ConsumerInfo(const ConsumerRef&)> describe;
  std::map<std::string, InstanceState> instances;
  std::map<HourKey, DeviceAcc> hours;
  std::set<HourKey> touched;
  Micros forgotten_before_us = INT64_MIN;
  Micros latest_us = INT64_MIN;
  Micros observing_since_us = INT64_MAX;  // see CounterLedger::ObserveSince
  std::int64_t ignored = 0;
  std::int64_t resets = 0;
  std::int64_t late_dropped = 0;
  std::int64_t skipped_buckets = 0;  // histogram bucket samples of a layout we do not read
  std::int64_t skipped_values = 0;   // counter samples NaN, infinite or negative
  // What changed since the state was last saved (PendingState): parts to write and to erase.
  bool engine_dirty = false;
  std::set<std::string> dirty_instances, removed_instances;
  std::set<HourKey> dirty_hours, removed_hours;

  DeviceAcc& Acc(Micros hour, const std::string& gpu, const InstanceState& inst);

  void Book(ConsumerAcc& c, const InstanceState& inst, const std::string& gpu,
            const ConsumerRef& ref);

  // Adds the integer `delta` over (t0, t1] to the hours it covers, split exactly in proportion
  // to the time in each (largest remainder: the pieces sum to the delta).
  // `bucket`: the histogram bucket index of a kComputeBucket / kMemoryBucket sample.
  void Spread(const CounterKind& kind, const Sample& s, std::int64_t delta, Micros t0, Micros t1,
              const InstanceState& inst, int bucket = -1);

  // --- State serialisation: shared by the whole State() and its parts. ---
  state::EngineFields Engine() const;
  json EngineJson() const;
  // Reads the engine's fields from a saved state; returns its version.
  Result<int> ReadEngine(const json& j);

  void MarkAllDirty();
  // Cumulative counts to counts per bucket. A delta split over an hour boundary is apportioned
  // per series, so one bucket's piece may round one below the bucket before it: clamped at 0.
  static UsageHistogram PerBucket(const ConsumerAcc& c);

  LedgerHour Close(const HourKey& key, const DeviceAcc& a) const;

  // Raises the peak memory of the sample's consumer in `hour`, where it has a row.
  void RaisePeak(Micros hour, const Sample& s, Bytes bytes);

  void Feed(const TargetScrape& scrape);

  // The scrape's facts (devices, attribution sources) into `inst`; returns where a counter that
  // went back to zero, or a series new on a known agent, counts from.
  Micros FeedFacts(const TargetScrape& scrape, InstanceState& inst, Micros prev_at);

  // The scrape's counters: each sample's delta since the last, spread over the hours it covers.
  void FeedCounters(const TargetScrape& scrape, InstanceState& inst, Micros reset_from);

  void FeedGauges(const TargetScrape& scrape);
};

}  // namespace gpuledger::ingest
