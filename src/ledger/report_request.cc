#include "ledger/report_request.h"

#include <fmt/format.h>

#include "common/time_util.h"
#include "report/window.h"
#include "store/ledger_identity.h"

namespace gpuledger::ledger {
namespace {

Error Named(const std::string& name, const std::string& message) {
  return InvalidArgument(name + ": " + message);
}

}  // namespace

Status ParseCostRules(std::string_view policy_text, std::string_view idle_text,
                      cost::Policy& policy, cost::IdleHandling& idle, const FieldNames& names) {
  auto parsed_policy = cost::ParsePolicy(policy_text);
  if (!parsed_policy) return Named(names.policy, parsed_policy.error().message);
  auto parsed_idle = cost::ParseIdleHandling(idle_text);
  if (!parsed_idle) return Named(names.idle, parsed_idle.error().message);
  policy = *parsed_policy;
  idle = std::move(*parsed_idle);
  return Status::Ok();
}

Result<ReadScope> ResolveReadScope(store::LedgerStore& store, std::string_view window) {
  auto extent = store.Extent();
  if (!extent) return extent.error();
  auto resolved = report::ResolveWindow(window, *extent);
  if (!resolved) return resolved.error();
  auto identity = store::ReadLedgerIdentity(store);
  if (!identity) return identity.error();
  return ReadScope{*extent, *resolved, identity->cluster, identity->currency};
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
  if (Status s = ParseCostRules(r.policy, r.idle, q.policy, q.idle, names); !s.ok())
    return s.error();
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
