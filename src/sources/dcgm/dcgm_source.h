#pragma once
// dcgm-exporter as an optional utilization source (docs/dcgm.md): a GpuSource that wraps the
// NVML one and fills, from dcgm-exporter's gauges, what NVML cannot give:
//   - `activity` (SM active, SM occupancy, tensor active, DRAM active) of every physical GPU and
//     MIG instance whose signals have none yet (GPM, read by the NVML source, takes precedence),
//     when the scrape has all four fields for that unit; activity_source = kDcgm;
//   - `busy_us` of every MIG instance that has none (NVML gives no utilization on MIG), from
//     PROF_GR_ENGINE_ACTIVE; busy_source = kDcgm.
// Each figure is the gauge times the reading's interval (end_us - start_us). dcgm-exporter
// samples DCGM every 30 s by default and a scrape returns its latest sample, so the integral is
// a sample-and-hold approximation: exact for a steady load, off by the load's variation within
// one sampling period otherwise; it is never a measured integral like NVML's.
//
// Nothing the exporter says fails the reading. A fetch error, a timeout or an unparseable body
// adds SourceFault{"dcgm-exporter", code, detail} and leaves the signals as the inner source
// made them; so does a stale exporter (below). Codes:
//   TIMEOUT, FETCH_FAILED, PARSE_FAILED   every failed attempt
//   STALE, MALFORMED_LINES, NO_MATCHING_GPU, MIG_UNMATCHED, MISSING_FIELDS
//                                         once per change of state (a condition that persists
//                                         is reported once, again after it cleared)
//
// Fetching: at most once per `refresh_us` of the readings' (monotonic) time, and only for a
// reading with GPUs and a non-empty interval; in between, the last good scrape is applied. A
// failed attempt is retried after `refresh_us` too, so a hung exporter costs one fetch timeout
// per refresh, not one per cycle; until then nothing is filled.
//
// Staleness: a wedged exporter (DCGM's host engine hung behind it) keeps serving its last
// sample. Every value of a live exporter moves between samples: board power jitters by
// milliwatts even on an idle GPU, profiling ratios carry six digits. So when every value of the
// scrape, of every unit, is unchanged for `stale_after_us` and not all of them are zero, the
// exporter is taken as stale and nothing is filled until a value moves. All zeros (idle GPUs
// in a counters file without power) are never stale: they under-report nothing.
//
// MIG join: dcgm-exporter labels an instance with its parent's UUID and GPU_I_ID, which is
// NVML's GPU instance id (MigInstance::gpu_instance_id): matched by it, exactly. Where NVML did
// not give the id, instances are matched by parent and compute slices
// (the "3g" of the profile: DCGM has been seen to misspell the memory part, "1g.11gb" for
// NVML's "1g.12gb"), and, among several instances of one parent with the same slices, in
// order: the reading's (NVML's MIG device index) to ascending GPU_I_ID. A legacy MIG UUID
// (MIG-GPU-<uuid>/<gi>/<ci>) carries its GPU instance id and is matched by it. Counts that
// differ leave that group unmatched (MIG_UNMATCHED).
//
// Thread-compatible, like every GpuSource.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/units.h"
#include "sources/dcgm/dcgm_exporter_parser.h"
#include "sources/gpu_source.h"

namespace gpuledger::sources::dcgm {

inline constexpr std::string_view kSourceName = "dcgm-exporter";

// Returns the exporter's body; must return within its own timeout (HttpGet does). An error whose
// message contains "timed out" is counted as TIMEOUT, any other as FETCH_FAILED.
using Fetch = std::function<Result<std::string>()>;

struct DcgmOptions {
  std::string url;  // for Describe() and messages only; `fetch` does the I/O
  Micros refresh_us = 5 * kMicrosPerSecond;
  Micros stale_after_us = 10 * 60 * kMicrosPerSecond;
};

// What Apply() did to one reading.
struct ApplyStats {
  int activity_filled = 0;  // units given `activity`
  int busy_filled = 0;      // MIG instances given `busy_us`
  int matched = 0;          // the reading's units the scrape had an entry for
  std::vector<std::string>
      unmatched_mig;  // "GPU-x: 2 NVML instances of 3 slices, 1 in dcgm-exporter"
  std::vector<std::string> missing_fields;  // "GPU-x: DCGM_FI_PROF_SM_ACTIVE, ..."
};

// The pure part: fills `reading` from `scrape` by the rules above (no faults, no state).
ApplyStats ApplyScrape(const DcgmScrape& scrape, GpuReading& reading);

// The MIG join above: the reading's MIG instance UUID -> the scrape's unit for it.
std::map<GpuUuid, const DcgmUnit*> MatchMigInstances(const GpuReading& reading,
                                                     const DcgmScrape& scrape,
                                                     std::vector<std::string>* unmatched = nullptr);

class DcgmGpuSource final : public GpuSource {
 public:
  DcgmGpuSource(std::unique_ptr<GpuSource> inner, Fetch fetch, DcgmOptions options);

  Result<GpuReading> Read() override;
  std::string Describe() const override;  // "<inner>; dcgm-exporter at URL"

 private:
  void Refresh(GpuReading& reading);
  // Reports `code` once while `detail` stays the same; an empty detail clears it.
  void Condition(GpuReading& reading, const std::string& code, const std::string& detail);
  static std::vector<double> Fingerprint(const DcgmScrape& scrape);

  std::unique_ptr<GpuSource> inner_;
  Fetch fetch_;
  DcgmOptions options_;
  Micros elapsed_us_ = 0;                  // sum of the readings' interval lengths
  std::optional<Micros> last_attempt_us_;  // on elapsed_us_'s scale
  std::optional<DcgmScrape> scrape_;       // the last good one
  bool usable_ = false;                    // the last attempt gave a fresh, parseable scrape
  std::vector<double> fingerprint_;
  Micros fingerprint_since_us_ = 0;
  std::map<std::string, std::string> conditions_;  // code -> detail last reported
};

}  // namespace gpuledger::sources::dcgm
