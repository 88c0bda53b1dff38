#pragma once
// GpuSource over NVML (docs/nvml.md). Every NVML call runs under a Watchdog deadline; a failed
// call degrades only its datum or device and becomes a SourceFault{"nvml", "<NVML error name>",
// "<function>(<uuid>)"}. A node without a driver gets a "no GPU" source that keeps answering.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/units.h"
#include "sources/gpu_source.h"
#include "sources/nvml/nvml_api.h"

namespace gpuledger::nvml {

struct NvmlSourceOptions {
  Micros call_deadline_us = 2'000'000;  // per NVML call
  int lost_retry_cycles = 10;           // while a GPU is lost, re-enumerate every N reads
  // A sample stands for at most this long (besides the read interval): after a gap (a stale
  // source, a full NVML sample buffer, idle processes that NVML does not sample) one sample is
  // not extrapolated over the whole gap. NVML samples every 1/6 s to 1 s.
  Micros max_sample_period_us = 2'000'000;
};

// Loads `library` (normally "libnvidia-ml.so.1"), runs nvmlInit_v2 and returns the source. Never
// fails: without the library, a required symbol or a working driver it returns a "no GPU"
// source whose Read() gives an empty reading with one fault (LIBRARY_NOT_FOUND,
// FUNCTION_NOT_FOUND, DRIVER_NOT_LOADED, ... or TIMEOUT). `clock` is the agent's clock (wall time
// on the same base as NVML's sample timestamps; lengths from its monotonic part); it must
// outlive the source.
std::unique_ptr<sources::GpuSource> OpenNvmlSource(const std::string& library,
                                                   Micros call_deadline_us, const Clock& clock);
// The same over an already resolved table (tests inject fakes here; the table's `library` may be
// null). Runs nvmlInit_v2 through the watchdog; nvmlShutdown runs on destruction unless a call
// is hung.
std::unique_ptr<sources::GpuSource> OpenNvmlSource(NvmlApi api, NvmlSourceOptions options,
                                                   const Clock& clock);
// The "no GPU" source: Read() returns an empty reading carrying `fault`; Describe() is
// "no GPU: <why>".
std::unique_ptr<sources::GpuSource> MakeNoGpuSource(sources::SourceFault fault, std::string why,
                                                    const Clock& clock);

// ---- Pure helpers, exposed for tests ----------------------------------------------------------

// The MIG profile at the end of a MIG device's name: "NVIDIA H100 80GB HBM3 MIG 3g.40gb" ->
// "3g.40gb" (also "1g.10gb+me", "1c.3g.40gb"); empty when the name carries none.
std::string ParseMigProfile(std::string_view mig_device_name);
// GPU instance slices of a profile: "3g.40gb" -> 3, "1c.3g.40gb" -> 3; 0 when unparsable.
int ProfileSlices(std::string_view profile);

struct ProcessEntry {
  unsigned pid = 0;
  Bytes used_memory_bytes = 0;  // 0 when NVML says NVML_VALUE_NOT_AVAILABLE
  bool mps_client = false;      // listed by nvmlDeviceGetMPSComputeRunningProcesses_v3
};
// Decodes `count` entries of a *RunningProcesses_v3 buffer of `capacity` nvmlProcessInfo_t that
// was filled with `sentinel` bytes before the call. R535+ drivers write 32-byte entries, R510-R530
// wrote 24-byte ones through the same _v3 symbol: the extent the driver overwrote tells which.
std::vector<ProcessEntry> ParseProcessInfos(const nvmlProcessInfo_t* buffer, std::size_t capacity,
                                            unsigned count, unsigned char sentinel);

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
