#pragma once
// Human and machine renderings of numbers and reports: the CLI's only formatting code.

#include <string>

#include "common/money.h"
#include "common/units.h"
#include "io/terminal.h"
#include "report/report.h"

namespace gpuledger::cli {

std::string GpuHours(GpuMicros us);      // "12.34"
std::string GibHours(KibSeconds kib_s);  // "12.3"

enum class Format { kTable, kCsv, kJson };
Result<Format> ParseFormat(std::string_view text);

// `report` output. JSON: report::ReportToJson (rows with "activity" and "utilization");
// memory_kib_s is an integer (KiB held for one second). CSV: key,allocated_gpu_us,
// compute_gpu_us,memory_kib_s,energy_mj,cost_nanos,quality, then the activity GPU-µs (sm_active,
// sm_occupancy, tensor_active, dram_active), activity_source and the utilization class. The
// table fits `columns`: key, allocated and used GPU-hours, cost, quality and class ("*" where
// no SM activity was there, said once below the table); a key too long for its column is cut
// with "…". `wide`: memory GiB-hours too, and every key whole.
std::string RenderReport(const report::Report& report, Format format, bool wide = false,
                         std::size_t columns = kDefaultColumns);

}  // namespace gpuledger::cli
