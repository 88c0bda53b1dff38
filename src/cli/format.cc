#include "cli/format.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/csv.h"
#include "common/time_util.h"
#include "report/report_json.h"

namespace gpuledger::cli {

std::string GpuHours(GpuMicros us) {
  return fmt::format("{:.2f}", static_cast<double>(us) / kMicrosPerHour);
}

std::string GibHours(KibSeconds kib_s) {
  constexpr double kKibSecondsPerGibHour = 1024.0 * 1024.0 * 3600.0;
  return fmt::format("{:.1f}", static_cast<double>(kib_s) / kKibSecondsPerGibHour);
}

std::string Wrap(std::string_view text, std::string_view indent, std::size_t width) {
  std::string out, line(indent);
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = std::min(text.find(' ', pos), text.size());
    const std::string_view word = text.substr(pos, end - pos);
    pos = end + 1;
    if (word.empty()) continue;
    const bool first = line.size() == indent.size();
    if (!first && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line = std::string(indent);
    }
    if (line.size() > indent.size()) line += ' ';
    line += word;
  }
  if (line.size() > indent.size()) out += line + "\n";
  return out;
}

Result<Format> ParseFormat(std::string_view text) {
  if (text == "table") return Format::kTable;
  if (text == "csv") return Format::kCsv;
  if (text == "json") return Format::kJson;
  return InvalidArgument(fmt::format("--format '{}': expected table, csv or json", text));
}

std::string RenderReport(const report::Report& r, Format format, bool wide) {
  const std::string aggregate = report::ToString(r.group_by);
  if (format == Format::kJson) return report::ReportToJson(r);
  if (format == Format::kCsv) {
    std::string out =
        "key,allocated_gpu_us,compute_gpu_us,memory_kib_s,energy_mj,cost_nanos,quality,"
        "sm_active_gpu_us,sm_occupancy_gpu_us,tensor_active_gpu_us,dram_active_gpu_us,"
        "activity_source,class\n";
    auto line = [&](const std::string& key, const report::Figures& f, std::string_view cls) {
      out +=
          fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{}\n", CsvQuote(key), f.allocated_gpu_us,
                      f.compute_gpu_us, f.memory_kib_s, f.energy_mj, f.cost_nanos,
                      ToString(f.quality), f.activity.sm_active_us, f.activity.sm_occupancy_us,
                      f.activity.tensor_active_us, f.activity.dram_active_us,
                      CsvQuote(report::FormatSource(f.activity_quality, f.activity_rule)), cls);
    };
    for (const auto& row : r.rows)
      line(row.key, row.figures, utilization::ToString(row.utilization.cls));
    line("__idle__", r.idle, "");
    line("__unattributed__", r.unattributed, "");
    return out;
  }
  // The key column: as wide as the longest key within [16, 60] with --wide; else the width
  // that keeps the table within 100 columns, longer keys on a line of their own.
  constexpr std::size_t kNarrowKey = 26;
  std::size_t width = aggregate.size();
  for (const auto& row : r.rows) width = std::max(width, row.key.size());
  width = wide ? std::min<std::size_t>(std::max<std::size_t>(width, 16), 60)
               : std::min(std::max<std::size_t>(width, 8), kNarrowKey);
  std::string out = fmt::format("{} .. {}   policy {}   idle {}\n", FormatRfc3339(r.from_us),
                                FormatRfc3339(r.to_us), cost::ToString(r.policy),
                                cost::ToString(r.idle_handling));
  for (const report::StatementRef& st : r.statements)
    out += fmt::format("closed statement {} version {}, closed {} by gpuledger {}\n", st.period,
                       st.version, FormatRfc3339(st.closed_at_us), st.build);
  const std::string head = aggregate.size() > width ? aggregate.substr(0, width) : aggregate;
  out += wide ? fmt::format("{:<{}}  {:>11}  {:>11}  {:>11}  {:>13}  {:<9}  {}\n", head, width,
                            "alloc GPU-h", "used GPU-h", "mem GiB-h", "cost", "quality", "class")
              : fmt::format("{:<{}}  {:>11}  {:>11}  {:>13}  {:<9}  {}\n", head, width,
                            "alloc GPU-h", "used GPU-h", "cost", "quality", "class");
  // `used`: whether the row's compute is time used. Idle's is the time nobody used: left blank
  // (its alloc column is the time no grant held, its memory what nobody held).
  auto line = [&](const std::string& key, const report::Figures& f, std::string_view q,
                  std::string cls, bool used = true) {
    std::string cell = key;
    if (key.size() > width) {
      out += key + "\n";
      cell.clear();
    }
    const std::string compute = used ? GpuHours(f.compute_gpu_us) : std::string();
    std::string text =
        wide ? fmt::format("{:<{}}  {:>11}  {:>11}  {:>11}  {:>13}  {:<9}  {}", cell, width,
                           GpuHours(f.allocated_gpu_us), compute, GibHours(f.memory_kib_s),
                           DisplayMoney(f.cost_nanos), q, cls)
             : fmt::format("{:<{}}  {:>11}  {:>11}  {:>13}  {:<9}  {}", cell, width,
                           GpuHours(f.allocated_gpu_us), compute, DisplayMoney(f.cost_nanos), q,
                           cls);
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  };
  // The class, and "*" where no SM activity was there to tell a starved GPU apart.
  bool starred = false;
  for (const auto& row : r.rows) {
    const bool star =
        row.utilization.nvml_only && row.utilization.cls != utilization::Class::kUnallocated;
    starred = starred || star;
    line(row.key, row.figures, ToString(row.figures.quality),
         std::string(utilization::ToString(row.utilization.cls)) + (star ? "*" : ""));
  }
  line("(idle)", r.idle, "", "", /*used=*/false);
  line("(unattributed)", r.unattributed, "", "");
  out += wide ? fmt::format("{:<{}}  {:>11}  {:>11}  {:>11}  {:>13}\n", "total", width,
                            GpuHours(r.total.metered_us), GpuHours(r.total.busy_us), "",
                            DisplayMoney(r.total.device_cost_nanos))
              : fmt::format("{:<{}}  {:>11}  {:>11}  {:>13}\n", "total", width,
                            GpuHours(r.total.metered_us), GpuHours(r.total.busy_us),
                            DisplayMoney(r.total.device_cost_nanos));
  for (const report::Adjustment& a : r.adjustments) {
    out += fmt::format("adjustment for {} (late data since statement version {}): {}\n", a.period,
                       a.version, DisplayMoney(a.device_cost_nanos));
    for (const auto& [key, cost] : a.rows)
      out += fmt::format("  {:<{}}  {:>13}\n", key, width, DisplayMoney(cost));
    if (a.idle_cost_nanos != 0)
      out += fmt::format("  {:<{}}  {:>13}\n", "(idle)", width, DisplayMoney(a.idle_cost_nanos));
    if (a.unattributed_cost_nanos != 0)
      out += fmt::format("  {:<{}}  {:>13}\n", "(unattributed)", width,
                         DisplayMoney(a.unattributed_cost_nanos));
  }
  if (starred)
    out += "* nvml-only: no SM activity (GPM or DCGM) to tell a starved GPU from a busy one\n";
  if (!r.total.unpriced_models.empty())
    out += fmt::format(
        "warning: no catalog price for {}: their cost is 0 until the catalog "
        "names them (--catalog)\n",
        fmt::join(r.total.unpriced_models, ", "));
  return out;
}

}  // namespace gpuledger::cli
