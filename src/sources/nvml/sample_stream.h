#pragma once
// NVML's sampled streams (a device's GPU-utilization samples, a device's per-process samples)
// turned into time: integration between reads and re-anchoring across wall-clock steps. Pure:
// the source calls these with what NVML returned, the tests with samples they write.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "common/units.h"

namespace gpuledger::nvml {

// `v` within [0, hi] (a negative `hi` counts as 0).
inline Micros Clamp(Micros v, Micros hi) {
  return std::clamp<Micros>(v, 0, std::max<Micros>(hi, 0));
}

// A timestamp moved by `by` µs, floored at 0 (a timeline before the epoch has no samples).
inline unsigned long long MovedTimestamp(unsigned long long ts, Micros by) {
  const Micros moved = static_cast<Micros>(ts) + by;
  return moved > 0 ? static_cast<unsigned long long>(moved) : 0;
}

// Percent-µs (what IntegrateSamples returns) to µs, rounded half up, clamped to the interval.
inline GpuMicros PercentMicrosToMicros(std::int64_t percent_us, Micros interval_us) {
  return Clamp((percent_us + 50) / 100, interval_us);
}

// Where a sampled stream (a device's GPU-utilization samples, or its per-process samples)
// stands between reads.
struct SampleCursor {
  unsigned long long last_seen_ts = 0;                   // passed to NVML as lastSeenTimeStamp
  std::optional<unsigned long long> previous_sample_ts;  // latest sample timestamp integrated
  // NVML's own timestamps of the latest samples integrated (the last kCountedKept distinct
  // ones, oldest first): after a backward step NVML returns them again, on the old timeline.
  std::deque<unsigned long long> counted_ts;
};
// About 85 s of samples at NVML's fastest rate (6 a second): longer than drivers keep them.
inline constexpr std::size_t kCountedKept = 512;
struct UtilSample {
  unsigned long long ts = 0;  // µs since the epoch
  unsigned key = 0;           // pid, or 0 for a device sample
  double percent = 0;
};
// Integrates samples newer than cursor.last_seen_ts as percent x period, where a sample's period
// is the gap to the previous distinct sample timestamp of the stream (the first sample ever: the
// gap to `previous_read_us`), clamped to [0, max_period_us]. Returns percent-µs per key and
// advances the cursor. Divide by 100 for µs.
std::map<unsigned, std::int64_t> IntegrateSamples(std::vector<UtilSample> samples,
                                                  SampleCursor& cursor, Micros previous_read_us,
                                                  Micros max_period_us);

// The wall clock between two reads (common/clock.h), as the sample streams see it. NVML stamps
// samples with the wall clock, so after a step samples taken before it are on the old timeline
// and those taken after it on the new one (old + step_us). The read that sees a step
// re-anchors every stream onto the new timeline, so that no sample is lost (after a backward
// step every new sample is older than the cursor) and none is counted twice (after a backward
// step NVML also returns, for as long as it keeps them, the samples already counted on the
// stretch of wall time the clock went back over):
//   1. ShiftCursor moves each stream's cursor by the step (before any NVML call);
//   2. QueryTimestamp is the lastSeenTimeStamp to ask NVML with;
//   3. PlaceSamples, on every read, keeps what this read integrates and puts it on the new
//      timeline; then IntegrateSamples runs as usual.
// Exact for any step beyond kWallStepToleranceUs, but for a new sample stamped with the very
// microsecond of one counted before the step (it is taken for that one and dropped). Steps
// within the tolerance are not re-anchored: they cannot be told apart from slewing, and cost at
// most that much sampled time; metered time is monotonic either way.
struct WallStep {
  Micros step_us = 0;           // the new timeline minus the old one; 0: no step
  Micros previous_read_us = 0;  // wall time of the previous read (old timeline)
  Micros read_us = 0;           // wall time of this read (new timeline)
};
void ShiftCursor(SampleCursor& cursor, Micros step_us);
// For a cursor already shifted: after a forward step the samples taken between the previous
// read and the step still carry old (smaller) timestamps, so NVML is asked from the old position.
unsigned long long QueryTimestamp(const SampleCursor& shifted, const WallStep& step);
// Keeps the samples this read integrates and records their timestamps in cursor.counted_ts.
// Never one already counted (cursor.counted_ts), nor one stamped after the read (taken during
// the read: the next read's; or from an old timeline ahead of the clock). Across a step: those
// taken since the previous read on the new timeline ((previous + step, read]) as they are, those
// not yet counted on the old one ((last seen, read - step]) moved by the step; the rest
// (counted before, or on neither timeline) are dropped. `cursor` is already shifted.
void PlaceSamples(std::vector<UtilSample>& samples, SampleCursor& cursor, const WallStep& step);

}  // namespace gpuledger::nvml
