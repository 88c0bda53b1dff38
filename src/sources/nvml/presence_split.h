#pragma once
// Per-process GPU time from NVML's samples on a shared GPU, by presence: each device sample
// window's busy time goes to the processes NVML sampled within kPresenceHalfWidthUs of the
// window, in proportion to their SM %. On a real H200 NVML gives each 200 ms window whole to the
// one process holding the GPU as it closes, so the window's owner and its neighbours' owners
// together say better who ran in it than the owner alone: on the captures whose truth was
// counted (../shared/data/h200 runs 2-4) the worst error per run averaged 22% against 52% for
// weighting each sample by its own period, and 32% against 40% on 60 random phase sets of the
// window-owner model (bench/nvml_estimators.py; docs/attribution.md). Pure: the source calls it
// with what NVML returned, the tests with samples they write.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "common/units.h"
#include "sources/nvml/sample_stream.h"

namespace gpuledger::nvml {

// How far from a window a process sample still counts as present in it. 100 ms: half of an
// H200's 200 ms window, so a window is shared between its own owner and the previous one's
// (their samples carry the windows' end times, to within 80 µs on the H200); 300 ms and more
// smear the owners of farther windows in (worse on the model, see above).
inline constexpr Micros kPresenceHalfWidthUs = 100'000;
// A bound on the samples carried between reads (NVML keeps about 30 s of them; this holds more).
inline constexpr std::size_t kPresenceMaxSamples = 4096;

// What a device's presence split carries from one read to the next.
struct PresenceState {
  // Per-process samples that may still be near the next window, by timestamp.
  std::deque<UtilSample> samples;
  // The latest device sample's timestamp: where the next window starts.
  std::optional<unsigned long long> last_device_ts;
};

// Moves everything carried by a wall-clock step (sample_stream.h's WallStep), as ShiftCursor
// does for the cursors.
void ShiftPresence(PresenceState& state, Micros step_us);

// Adds this read's per-process samples (key = pid) and splits each window its device samples
// (key 0) close, both already placed on the current timeline and never counted before
// (PlaceSamples): the window's percent x its length (capped at max_period_us; the first window
// ever starts at `previous_read_us`, as IntegrateSamples counts it) among the
// processes sampled from 100 ms before its start to 100 ms after its end, by their SM %, in
// percent-µs per pid (PercentMicrosToMicros turns it into µs). A window no process was sampled
// near goes to nobody. A sample NVML stamps by a window's end but returns only after the read
// that returned the window's device sample is not counted for that window: NVML stamps both
// within microseconds, so that is at most one window now and then.
std::map<unsigned, std::int64_t> SplitByPresence(PresenceState& state,
                                                 std::vector<UtilSample> device,
                                                 std::vector<UtilSample> processes,
                                                 Micros previous_read_us, Micros max_period_us);

}  // namespace gpuledger::nvml
