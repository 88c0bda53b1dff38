#pragma once
// The report as JSON — what `gpuledger report --format json` prints and the server's
// /api/v1/report returns — and back, for `report --server`.

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "common/result.h"
#include "report/report.h"

namespace gpuledger::report {

// {"window":{"start","end"},"aggregate","policy","idle_handling","rows":[{"key",
// "allocated_gpu_us","compute_gpu_us","memory_kib_s","energy_mj","cost_nanos","quality",
// "activity":{...},"granted_memory_kib_s","share_source","utilization":{...}}],
// "idle":{...},"unattributed":{...},"total":{"device_cost_nanos","metered_us","unmetered_us",
// "busy_us","device_hours","unpriced_models"}}
// Every figure is an integer: GPU-µs, memory-time in KiB-s (KiB held for one second), mJ and
// nanos of the currency. "activity" (ActivityJson) and "utilization" (UtilizationJson) are
// on consumer rows only (docs/utilization.md). ReportFromJson recomputes "utilization" from the
// figures, and reads a document without activity (an older server's) as having none.
std::string ReportToJson(const Report& report);
// The same document as a JSON value, for an answer that carries more beside it.
nlohmann::json ReportJson(const Report& report);
Result<Report> ReportFromJson(std::string_view json);

// One consumer row of the document ("key", its figures, "utilization" only when asked for) and
// back (the classification recomputed), for a reader that keeps rows one at a time.
nlohmann::json RowJson(const Row& row, bool with_utilization = true);
Result<Row> RowFromJson(const nlohmann::json& row);

// {"sm_active_gpu_us","sm_occupancy_gpu_us","tensor_active_gpu_us","dram_active_gpu_us",
//  "allocated_gpu_us","compute_gpu_us","source"}: the activity integrals, the allocated and
// compute time of the rows that carried activity, and FormatSource of its quality and rule.
nlohmann::json ActivityJson(const Figures& figures);
// Sets "compute_source" (FormatSource of the quality and rules) and "compute_error_band" (the
// widest error the rules showed on real hardware, model/compute_band.h; null where unmeasured).
void AddComputeSource(const Figures& figures, nlohmann::json& out);
// {"class","signals":{name: fraction},"thresholds":{name: fraction},"basis","reason"}.
nlohmann::json UtilizationJson(const utilization::Classification& c);

}  // namespace gpuledger::report
