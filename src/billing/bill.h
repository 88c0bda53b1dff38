#pragma once
// Bill import and reconciliation planning (`gpuledger reconcile`, design section 4). Pure:
// the bill's text and the ledger's device-hours in, per node-day reconciliations out.
//
// A bill is a FOCUS CSV (any FOCUS version: only these columns are read, by header name):
//   BilledCost, ResourceId, ChargePeriodStart, ChargePeriodEnd   required
//   BillingCurrency, ResourceName, ChargeCategory                optional
// Other columns are ignored. Rows with a ChargeCategory other than "Usage" (Purchase, Tax,
// Credit, Adjustment) are skipped with a warning: reconciliation scales usage.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/units.h"
#include "model/ledger.h"
#include "model/reconciliation.h"

namespace gpuledger::billing {

// The largest BilledCost one bill line may carry either way: 1,000,000,000.
inline constexpr Nanos kMaxBilledLineNanos = 1'000'000'000 * kNanosPerUnit;

struct BillLine {
  int line = 0;  // 1-based line in the file, for messages
  std::string resource_id;
  std::string resource_name;
  std::string charge_category;  // "" when the bill has no such column
  Micros start_us = 0;          // ChargePeriodStart, inclusive
  Micros end_us = 0;            // ChargePeriodEnd, exclusive
  Nanos billed_nanos = 0;
  std::string currency;     // "" when the bill has no BillingCurrency column
  int currency_column = 0;  // 1-based character column of BillingCurrency, for messages
};

// Parses the whole file or nothing: the first bad field fails with "file:line:column: what"
// (a missing required column names the header line). Dates are RFC 3339 / ISO 8601 with an
// offset ("2024-06-01T00:00:00Z"); an end not after its start is an error.
Result<std::vector<BillLine>> ParseFocusBill(std::string_view content, std::string_view file);

// A bill row that reconciles nothing, and why (an unknown resource, a skipped category).
struct BillWarning {
  int line = 0;
  std::string resource_id;
  Nanos billed_nanos = 0;
  std::string message;
};

struct ReconcilePlan {
  std::vector<Reconciliation> node_days;  // ordered by (day_us, node)
  std::vector<BillWarning> warnings;      // in file order
};

// The node a bill row is about, among `nodes` (the ledger's DeviceHour.node values), or "" when
// none. In order: ResourceId equals a node name; ResourceName equals a node name; the last
// segment of ResourceId after '/' equals a node name (a Kubernetes providerID such as
// "gce://project/zone/NAME" or "aws:///us-east-1a/i-0abc" when nodes are named by instance,
// or an ARN ".../instance/i-0abc").
std::string MatchNode(const BillLine& line, std::span<const std::string> nodes);

// Sums the matched bill rows per node and UTC day (a row spanning several days is split over
// them by its overlap with each, exactly) and records, per node-day, the modelled price (Σ of
// `devices`' price_nanos on it) and the factor billed/modelled. `devices` must hold every
// device-hour of the days the bill covers. Rows for nodes not in `devices`, and node-days with
// no device-hour, become warnings, not errors. Errors (exit 2): a currency other than
// `ledger_currency` (when both are known), a node-day whose billed total is negative, or a row
// whose charge period is longer than kMaxChargePeriodDays.
inline constexpr Micros kMaxChargePeriodDays = 366;
Result<ReconcilePlan> PlanReconciliation(std::span<const BillLine> lines,
                                         std::span<const DeviceHour> devices,
                                         std::string_view ledger_currency,
                                         std::string_view bill_file, Micros imported_at_us);

// billed/modelled as a reduced ratio ("9/10"; "1/0" for a zero model and a positive bill) and
// in parts per million, rounded half away from zero (0 when modelled is 0).
std::string FactorRatio(Nanos billed_nanos, Nanos modelled_nanos);
std::int64_t FactorPpm(Nanos billed_nanos, Nanos modelled_nanos);

}  // namespace gpuledger::billing
