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

Result<Format> ParseFormat(std::string_view text) {
  if (text == "table") return Format::kTable;
  if (text == "csv") return Format::kCsv;
  if (text == "json") return Format::kJson;
  return InvalidArgument(fmt::format("--format '{}': expected table, csv or json", text));
}

std::string RenderReport(const report::Report& r, Format format, bool wide, std::size_t columns) {
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
  // The classes as printed: "*" where no SM activity was there to tell a starved GPU apart.
  std::vector<std::string> classes;
  bool starred = false;
  std::size_t class_width = 5;  // "class"
  for (const auto& row : r.rows) {
    const bool star =
        row.utilization.nvml_only && row.utilization.cls != utilization::Class::kUnallocated;
    starred = starred || star;
    classes.push_back(std::string(utilization::ToString(row.utilization.cls)) + (star ? "*" : ""));
    class_width = std::max(class_width, classes.back().size());
  }
  // The key column: every key whole with --wide; else what `columns` leaves beside the figures,
  // a longer key cut with "…" (never a row broken over two lines). Columns two spaces apart
  // where that leaves "(unattributed)" whole, else one (80 columns and a long class).
  std::size_t need = std::max(DisplayWidth(aggregate), DisplayWidth("(unattributed)"));
  for (const auto& row : r.rows) need = std::max(need, DisplayWidth(row.key));
  auto figures_width = [&](std::size_t sep) {
    return (wide ? 6 : 5) * sep + 11 + 11 + (wide ? 11 : 0) + 13 + 9;
  };
  std::size_t sep = 2, width = need;
  if (!wide) {
    auto room = [&](std::size_t s) {
      return columns - std::min(columns, figures_width(s) + class_width);
    };
    const std::size_t whole = DisplayWidth("(unattributed)");
    if (room(2) < std::min(need, whole)) sep = 1;
    width = std::min(need, std::max<std::size_t>(room(sep), 12));
  }
  const std::string gap(sep, ' ');
  std::string out = fmt::format("{} .. {}   policy {}   idle {}\n", FormatRfc3339(r.from_us),
                                FormatRfc3339(r.to_us), cost::ToString(r.policy),
                                cost::ToString(r.idle_handling));
  for (const report::StatementRef& st : r.statements)
    out += fmt::format("closed statement {} version {}, closed {} by gpuledger {}\n", st.period,
                       st.version, FormatRfc3339(st.closed_at_us), st.build);
  out += wide ? fmt::format("{0}{1}{2:>11}{1}{3:>11}{1}{4:>11}{1}{5:>13}{1}{6:<9}{1}{7}\n",
                            PadRight(aggregate, width), gap, "alloc GPU-h", "used GPU-h",
                            "mem GiB-h", "cost", "quality", "class")
              : fmt::format("{0}{1}{2:>11}{1}{3:>11}{1}{4:>13}{1}{5:<9}{1}{6}\n",
                            PadRight(aggregate, width), gap, "alloc GPU-h", "used GPU-h", "cost",
                            "quality", "class");
  // `used`: whether the row's compute is time used. Idle's is the time nobody used: left blank
  // (its alloc column is the time no grant held, its memory what nobody held).
  auto line = [&](const std::string& key, const report::Figures& f, std::string_view q,
                  std::string_view cls, bool used = true) {
    const std::string cell = PadRight(key, width);
    const std::string compute = used ? GpuHours(f.compute_gpu_us) : std::string();
    std::string text =
        wide ? fmt::format("{0}{1}{2:>11}{1}{3:>11}{1}{4:>11}{1}{5:>13}{1}{6:<9}{1}{7}", cell, gap,
                           GpuHours(f.allocated_gpu_us), compute, GibHours(f.memory_kib_s),
                           DisplayMoney(f.cost_nanos), q, cls)
             : fmt::format("{0}{1}{2:>11}{1}{3:>11}{1}{4:>13}{1}{5:<9}{1}{6}", cell, gap,
                           GpuHours(f.allocated_gpu_us), compute, DisplayMoney(f.cost_nanos), q,
                           cls);
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  };
  for (std::size_t i = 0; i < r.rows.size(); ++i)
    line(r.rows[i].key, r.rows[i].figures, ToString(r.rows[i].figures.quality), classes[i]);
  line("(idle)", r.idle, "", "", /*used=*/false);
  line("(unattributed)", r.unattributed, "", "");
  out += wide ? fmt::format("{0}{1}{2:>11}{1}{3:>11}{1}{4:>11}{1}{5:>13}\n",
                            PadRight("total", width), gap, GpuHours(r.total.metered_us),
                            GpuHours(r.total.busy_us), "", DisplayMoney(r.total.device_cost_nanos))
              : fmt::format("{0}{1}{2:>11}{1}{3:>11}{1}{4:>13}\n", PadRight("total", width), gap,
                            GpuHours(r.total.metered_us), GpuHours(r.total.busy_us),
                            DisplayMoney(r.total.device_cost_nanos));
  for (const report::Adjustment& a : r.adjustments) {
    out += fmt::format("adjustment for {} (late data since statement version {}): {}\n", a.period,
                       a.version, DisplayMoney(a.device_cost_nanos));
    for (const auto& [key, cost] : a.rows)
      out += fmt::format("  {}  {:>13}\n", PadRight(key, width), DisplayMoney(cost));
    if (a.idle_cost_nanos != 0)
      out +=
          fmt::format("  {}  {:>13}\n", PadRight("(idle)", width), DisplayMoney(a.idle_cost_nanos));
    if (a.unattributed_cost_nanos != 0)
      out += fmt::format("  {}  {:>13}\n", PadRight("(unattributed)", width),
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
