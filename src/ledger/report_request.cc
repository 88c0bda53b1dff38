#include "ledger/report_request.h"

#include <fmt/format.h>

#include "common/time_util.h"
#include "report/window.h"

namespace gpuledger::ledger {
namespace {

Error Named(const std::string& name, const std::string& message) {
  return InvalidArgument(name + ": " + message);
}

}  // namespace

const FieldNames& FlagNames() {
  static const FieldNames kNames{"--window", "--by", "--policy", "--idle", "--step", "--filter"};
  return kNames;
}

const FieldNames& ParameterNames() {
  static const FieldNames kNames{"parameter 'window'", "parameter 'aggregate'",
                                 "parameter 'policy'", "parameter 'idle'",
                                 "parameter 'step'",   "parameter 'filter'"};
  return kNames;
}

Result<ReportQuery> ParseReportRequest(const ReportRequest& r, const TimeRange& extent,
                                       const FieldNames& names) {
  ReportQuery q;
  q.extent = extent;
  auto window = report::ResolveWindow(r.window, extent);
  if (!window) return Named(names.window, window.error().message);
  q.window = *window;
  auto by = report::ParseGroupBy(r.group_by);
  if (!by) return Named(names.group_by, by.error().message);
  q.group_by = std::move(*by);
  auto policy = cost::ParsePolicy(r.policy);
  if (!policy) return Named(names.policy, policy.error().message);
  q.policy = *policy;
  auto idle = cost::ParseIdleHandling(r.idle);
  if (!idle) return Named(names.idle, idle.error().message);
  q.idle = std::move(*idle);
  if (!r.step.empty()) {
    auto step = ParseDuration(r.step);
    if (!step || *step < kMicrosPerHour || *step % kMicrosPerHour != 0)
      return Named(names.step,
                   fmt::format("'{}' is not a whole number of hours (1h, 1d, 7d)", r.step));
    if (q.window.to_us <= q.window.from_us) return Named(names.window, "the ledger is empty");
    if ((q.window.to_us - q.window.from_us) / *step > kMaxSteps)
      return Named(names.step, fmt::format("more than {} steps in the window", kMaxSteps));
    q.step = *step;
  }
  auto filter = ParseFilter(r.filter);
  if (!filter) return Named(names.filter, filter.error().message);
  q.filter = std::move(*filter);
  return q;
}

}  // namespace gpuledger::ledger
