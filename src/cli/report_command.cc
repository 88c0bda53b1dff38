#include "cli/report_command.h"

#include <filesystem>

#include <fmt/format.h>

#include "cli/format.h"
#include "common/time_util.h"

namespace gpuledger::cli {

int ExitCodeFor(const Error& error) { return error.code == ErrorCode::kInvalidArgument ? 2 : 1; }

Result<store::TimeRange> ResolveWindow(std::string_view window, const store::TimeRange& extent) {
  if (window == "all") return extent;
  if (auto comma = window.find(','); comma != std::string_view::npos) {
    auto from = ParseRfc3339(window.substr(0, comma));
    auto to = ParseRfc3339(window.substr(comma + 1));
    if (!from) return InvalidArgument("--window: start: " + from.error().message);
    if (!to) return InvalidArgument("--window: end: " + to.error().message);
    if (*to <= *from)
      return InvalidArgument(fmt::format("--window '{}': end must be after start", window));
    return store::TimeRange{*from, *to};
  }
  auto length = ParseDuration(window);
  if (!length || *length <= 0)
    return InvalidArgument(fmt::format(
        "--window '{}': expected all, a duration such as 7d or 24h, or START,END in RFC 3339",
        window));
  Micros to = extent.to_us;
  return store::TimeRange{HourStart(to - *length), to};
}

Result<report::Report> BuildReportFromStore(store::LedgerStore& store, const ReportOptions& o) {
  auto by = report::ParseGroupBy(o.by);
  if (!by) return by.error();
  auto policy = cost::ParsePolicy(o.policy);
  if (!policy) return InvalidArgument("--policy: " + policy.error().message);
  auto idle = cost::ParseIdleHandling(o.idle);
  if (!idle) return InvalidArgument("--idle: " + idle.error().message);
  auto extent = store.Extent();
  if (!extent) return extent.error();
  auto range = ResolveWindow(o.window, *extent);
  if (!range) return range.error();
  auto devices = store.ReadDeviceHours(*range);
  if (!devices) return devices.error();
  auto usage = store.ReadUsage(*range);
  if (!usage) return usage.error();
  return report::BuildReport(*devices, *usage, *by, *policy, *idle, range->from_us,
                             range->to_us);
}

int RunReport(const ReportOptions& o, std::ostream& out, std::ostream& err) {
  auto format = ParseFormat(o.format);
  if (!format) {
    err << "error: " << format.error().message << "\n";
    return 2;
  }
  if (o.db.empty() || !std::filesystem::exists(o.db)) {
    err << "error: --db '" << o.db << "': no such ledger file (run `gpuledger demo` to make one)\n";
    return 2;
  }
  auto store = store::OpenSqliteLedger(o.db);
  if (!store) {
    err << "error: " << store.error().message << "\n";
    return ExitCodeFor(store.error());
  }
  auto r = BuildReportFromStore(**store, o);
  if (!r) {
    err << "error: " << r.error().message << "\n";
    return ExitCodeFor(r.error());
  }
  out << RenderReport(*r, *format);
  return 0;
}

}  // namespace gpuledger::cli
