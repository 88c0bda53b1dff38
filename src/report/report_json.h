#pragma once
// The report as JSON — what `gpuledger report --format json` prints and the server's
// /api/v1/report returns — and back, for `report --server`.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/json_writer.h"
#include "common/result.h"
#include "report/report.h"

namespace gpuledger::report {

// {"window":{"start","end"},"aggregate","policy","idle_handling","rows":[{"key",
// "allocated_gpu_us","compute_gpu_us","memory_kib_s","energy_mj","cost_nanos","quality",
// "compute_source","compute_error_band","activity":{...},"granted_memory_kib_s","share_source",
// "per_device":{"compute_gpu_us","cost_nanos"},"utilization":{...}}],
// "idle":{...},"unattributed":{...},"total":{"device_cost_nanos","metered_us","unmetered_us",
// "busy_us","device_hours","unpriced_models"}}
// Every figure is an integer: GPU-µs, memory-time in KiB-s (KiB held for one second), mJ and
// nanos of the currency. "activity" (WriteActivity) and "utilization" (WriteUtilization) are
// on consumer rows only (docs/utilization.md). ReportFromJson recomputes "utilization" from the
// figures, and reads a document without activity (an older server's) as having none.
// The document is written straight to text (common/json_writer.h): a tree of a month's rows was
// most of a large answer's time. Keys in each object are written in byte order, as JsonText
// writes a tree, so the text is what it was when it was one.
std::string ReportToJson(const Report& report);
// The document of a window with a step (/api/v1/report?step=): the window's report and "steps":
// [{"start","end","cost_nanos":{key: nanos, "__idle__": nanos, "__unattributed__": nanos}}],
// each step's cost per group, what a chart of the report over time draws.
std::string ReportToJson(const Report& window, const std::vector<Report>& steps);
// The document into a writer (one line or indented as the writer is), `steps` as above when set.
void WriteReport(JsonWriter& out, const Report& report, const std::vector<Report>* steps = nullptr);
// "ledger": {"start","end","window_reaches"} when `window` reaches past `extent` (ReachPast:
// "before", "after", "before and after"), nothing otherwise: what an answer over a window
// says where the ledger holds nothing of it.
void WriteLedgerReach(JsonWriter& out, const TimeRange& window, const TimeRange& extent);
Result<Report> ReportFromJson(std::string_view json);

// One consumer row on one line as a closed statement keeps it: "key" and its figures, without
// what RowFromJson derives (the classification, the error band). RowFromJson reads it back, the
// classification recomputed; it reads a full report row as well.
std::string StoredRowToJson(const Row& row);
Result<Row> RowFromJson(const nlohmann::json& row);

// Pieces of a row for a document that carries them beside others (/api/v1/allocation):
// "activity": {"allocated_gpu_us","compute_gpu_us","dram_active_gpu_us","sm_active_gpu_us",
// "sm_occupancy_gpu_us","source","tensor_active_gpu_us"}, the activity integrals, the allocated
// and compute time of the rows that carried activity, and FormatSource of its quality and rule;
// `with_gpu_hours` adds "<signal>_gpu_hours" beside each "<signal>_gpu_us" (OpenCost's unit).
void WriteActivity(JsonWriter& out, const Figures& figures, bool with_gpu_hours = false);
// GPU-µs as GPU-hours (OpenCost's unit beside ours), for every "_gpu_hours" / "gpuHours" field.
double GpuHours(GpuMicros us);
// "compute_error_band": the widest error the rules showed on real hardware
// (model/compute_band.h); null where unmeasured. "compute_source" is FormatSource(quality, rule).
void WriteComputeErrorBand(JsonWriter& out, const Figures& figures);
// "utilization": {"basis","class","reason","signals":{name: fraction},"thresholds":{name:
// fraction}}.
void WriteUtilization(JsonWriter& out, const utilization::Classification& c);

}  // namespace gpuledger::report
