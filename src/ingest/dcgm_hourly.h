#pragma once
// Activity for ledger rows from dcgm-exporter's hourly averages, read back through the
// Prometheus that scraped it (`gpuledger server --source prometheus=URL --dcgm-from-prometheus`,
// docs/ingest.md "Activity from dcgm-exporter"). Pure: no I/O; prometheus_source.cc queries.
//
// The rule, for one device-hour (whole GPUs only; MIG device-hours are left alone):
//  * the GPU's activity A = clamp(hourly average fraction, 0, 1) x metered_us, per field;
//  * it goes to the rows that ran work (compute_us > 0), like the agent's own split
//    (attribution/attribute.cc SplitActivity): all of it to a single such row; split by
//    compute_us among several (common/apportion.h, exact), the rule then adding "compute-share";
//  * quality kEstimated in both cases: the average of sampled gauges over the hour is not a
//    measurement of the rows' interval; rule "dcgm-exporter+prometheus-hourly";
//  * a device-hour where any row already has activity (GPM, or an agent run with
//    --dcgm-exporter) is left as it is: the agent measured, and an hourly average cannot tell
//    which part of the GPU's activity is left for the others.
// Rows with no compute keep no activity: activity with nobody running is a signal, not a
// quantity someone is charged for.

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "model/ledger.h"

namespace gpuledger::ingest {

inline constexpr std::string_view kDcgmHourlyRule = "dcgm-exporter+prometheus-hourly";
inline constexpr std::string_view kDcgmHourlyShareRule =
    "compute-share+dcgm-exporter+prometheus-hourly";

// Averages over one hour of dcgm-exporter's 0..1 profiling fields for one whole GPU; an absent
// field gives that part of the activity 0.
struct DcgmHourlyFractions {
  std::optional<double> sm_active;      // DCGM_FI_PROF_SM_ACTIVE / _SM_UTIL_RATIO
  std::optional<double> sm_occupancy;   // DCGM_FI_PROF_SM_OCCUPANCY / _SM_OCCUPANCY_RATIO
  std::optional<double> tensor_active;  // DCGM_FI_PROF_PIPE_TENSOR_ACTIVE / _TENSOR_UTIL_RATIO
  std::optional<double> dram_active;    // DCGM_FI_PROF_DRAM_ACTIVE / _DRAM_UTIL_RATIO
  bool operator==(const DcgmHourlyFractions&) const = default;
};

// GPU UUID ("GPU-...", dcgm-exporter's label UUID) -> its averages for one hour.
using DcgmHourlyByGpu = std::map<std::string, DcgmHourlyFractions>;

// Fills the activity of `hour`'s rows by the rule above; returns the number of rows filled.
int FillActivityFromDcgmHourly(LedgerHour& hour, const DcgmHourlyFractions& fractions);

}  // namespace gpuledger::ingest
