#pragma once
// The report as JSON — what `gpuledger report --format json` prints and the server's
// /api/v1/report returns — and back, for `report --server`.

#include <string>
#include <string_view>

#include "common/result.h"
#include "report/report.h"

namespace gpuledger::report {

// {"window":{"start","end"},"aggregate","policy","idle_handling","rows":[{"key",
// "allocated_gpu_us","compute_gpu_us","memory_kib_s","energy_mj","cost_nanos","quality"}],
// "idle":{...},"unattributed":{...},"total":{"device_cost_nanos","metered_us","unmetered_us",
// "busy_us","device_hours","unpriced_models"}}
// Every figure is an integer: GPU-µs, memory-time in KiB-s (KiB held for one second), mJ and
// nanos of the currency.
std::string ReportToJson(const Report& report);
Result<Report> ReportFromJson(std::string_view json);

}  // namespace gpuledger::report
