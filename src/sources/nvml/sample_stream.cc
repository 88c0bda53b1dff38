#include "sources/nvml/sample_stream.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace gpuledger::nvml {

std::map<unsigned, std::int64_t> IntegrateSamples(std::vector<UtilSample> samples,
                                                  SampleCursor& cursor, Micros previous_read_us,
                                                  Micros max_period_us) {
  std::map<unsigned, std::int64_t> out;
  std::stable_sort(samples.begin(), samples.end(),
                   [](const UtilSample& a, const UtilSample& b) { return a.ts < b.ts; });
  std::optional<unsigned long long> previous = cursor.previous_sample_ts;
  std::optional<unsigned long long> group_ts;  // timestamp of the samples being integrated
  Micros period = 0;
  for (const UtilSample& s : samples) {
    if (cursor.last_seen_ts != 0 && s.ts <= cursor.last_seen_ts) {
      continue;  // already counted (NVML returns only newer samples; guard anyway)
    }
    if (!group_ts || s.ts != *group_ts) {
      if (group_ts) previous = group_ts;
      group_ts = s.ts;
      // Samples sharing a timestamp (one per process) share the period that ends there.
      const Micros from = previous ? static_cast<Micros>(*previous) : previous_read_us;
      period = Clamp(static_cast<Micros>(s.ts) - from, max_period_us);
    }
    out[s.key] += std::llround(s.percent * static_cast<double>(period));
  }
  if (group_ts) {
    cursor.previous_sample_ts = group_ts;
    cursor.last_seen_ts = std::max(cursor.last_seen_ts, *group_ts);
  }
  return out;
}

void ShiftCursor(SampleCursor& cursor, Micros step_us) {
  // last_seen_ts stays non-zero: 0 would mean "nothing seen yet" (ask NVML for everything).
  if (cursor.last_seen_ts != 0) {
    cursor.last_seen_ts = std::max(1ull, MovedTimestamp(cursor.last_seen_ts, step_us));
  }
  if (cursor.previous_sample_ts) {
    cursor.previous_sample_ts = MovedTimestamp(*cursor.previous_sample_ts, step_us);
  }
}

unsigned long long QueryTimestamp(const SampleCursor& shifted, const WallStep& step) {
  if (shifted.last_seen_ts == 0 || step.step_us <= 0) return shifted.last_seen_ts;
  return MovedTimestamp(shifted.last_seen_ts, -step.step_us);
}

void PlaceSamples(std::vector<UtilSample>& samples, SampleCursor& cursor, const WallStep& step) {
  // Normally every sample is newer than all counted ones: the search runs only after a step back.
  unsigned long long newest_counted = 0;
  for (unsigned long long ts : cursor.counted_ts) newest_counted = std::max(newest_counted, ts);
  auto counted = [&](unsigned long long ts) {
    const auto& seen = cursor.counted_ts;
    return ts <= newest_counted && std::find(seen.begin(), seen.end(), ts) != seen.end();
  };
  const Micros since_new = step.previous_read_us + step.step_us;  // the previous read, new timeline
  const Micros old_last_seen = cursor.last_seen_ts == 0
                                   ? std::numeric_limits<Micros>::min()
                                   : static_cast<Micros>(cursor.last_seen_ts) - step.step_us;
  std::vector<UtilSample> placed;
  std::vector<unsigned long long> raw;  // NVML's timestamps of the placed samples
  for (UtilSample s : samples) {
    const Micros ts = static_cast<Micros>(s.ts);
    if (counted(s.ts)) continue;
    const bool current = ts <= step.read_us && (step.step_us == 0 || ts > since_new);
    if (!current) {
      // Across a step, one taken before it and not counted yet moves with the clock.
      if (step.step_us == 0 || ts <= old_last_seen || ts > step.read_us - step.step_us) continue;
      s.ts = MovedTimestamp(s.ts, step.step_us);
    }
    raw.push_back(static_cast<unsigned long long>(ts));  // NVML's own, before any move
    placed.push_back(s);
  }
  std::sort(raw.begin(), raw.end());
  raw.erase(std::unique(raw.begin(), raw.end()), raw.end());
  for (unsigned long long ts : raw) {
    if (counted(ts)) continue;
    cursor.counted_ts.push_back(ts);
    if (cursor.counted_ts.size() > kCountedKept) cursor.counted_ts.pop_front();
  }
  samples = std::move(placed);
}

}  // namespace gpuledger::nvml
