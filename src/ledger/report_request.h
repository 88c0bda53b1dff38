#pragma once
// A report as a user asks for it — the CLI's flags and the API's parameters name the same
// fields — checked once and resolved against the ledger into a ReportQuery. The edges only say
// what their users call each field; errors name the field that way.

#include <string>
#include <string_view>

#include "common/result.h"
#include "common/time_range.h"
#include "ledger/reports.h"

namespace gpuledger::ledger {

struct ReportRequest {
  std::string window = "all";  // report::ResolveWindow's forms
  std::string group_by = "namespace";
  std::string policy = "allocation";
  std::string idle = "keep";
  std::string step;    // "" one report; else a whole number of hours (1h, 1d, 7d)
  std::string filter;  // "" every consumer; else ledger/filter.h's language
};

// What an edge calls each field in an error ("--by", "parameter 'aggregate'"); by default the
// field's own name.
struct FieldNames {
  std::string window = "window";
  std::string group_by = "group_by";
  std::string policy = "policy";
  std::string idle = "idle";
  std::string step = "step";
  std::string filter = "filter";
};

// The cost policy and idle rule as a user writes them; kInvalidArgument "<policy name>: ..." or
// "<idle name>: ...".
Status ParseCostRules(std::string_view policy_text, std::string_view idle_text,
                      cost::Policy& policy, cost::IdleHandling& idle, const FieldNames& names = {});

inline constexpr int kMaxSteps = 1000;

// What a read of the ledger is over and in: the window a user named, resolved against the
// ledger's extent, and the ledger's cluster and currency.
struct ReadScope {
  TimeRange extent;  // the ledger's
  TimeRange window;
  std::string cluster;
  std::string currency;
};
// kInvalidArgument "window '...': ..." for a bad window; store errors as they are.
Result<ReadScope> ResolveReadScope(store::LedgerStore& store, std::string_view window);

// kInvalidArgument "<field name>: <what is wrong>" for the first bad field; a step on an empty
// ledger or more than kMaxSteps steps are errors of the step (window for an empty ledger).
Result<ReportQuery> ParseReportRequest(const ReportRequest& request, const TimeRange& extent,
                                       const FieldNames& names = {});

}  // namespace gpuledger::ledger
