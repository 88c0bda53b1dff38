#pragma once
// Exports of the priced ledger (design section 4): FOCUS 1.2 cost-and-usage rows and a plain
// CSV of the same rows (`gpuledger export`, `/api/v1/export/focus`). Pure: ledger rows in, text
// out; no store, no clock.
//
// One row per charge period (hour or UTC day) per workload (namespace/controller) per node, GPU
// model, sharing mode, pricing class and team; idle and unattributed capacity are rows of their
// own. Money is exact:
//   Σ EffectiveCost == Σ device-hour prices of the window, reconciled node-days at their bill;
//   Σ ListCost == ContractedCost sums == Σ modelled (catalog) device-hour prices;
//   BilledCost is 0 unless the row's node-day was reconciled from an invoice, then it is the
//   row's share of the billed amount (FOCUS: an allocated view must not double count invoices).
// See docs/focus.md for every column.

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "common/result.h"
#include "common/units.h"
#include "cost/policy.h"
#include "model/ledger.h"
#include "model/reconciliation.h"

namespace gpuledger::billing {

inline constexpr std::string_view kFocusVersion = "1.2";

enum class ChargePeriod { kHour, kDay };
Result<ChargePeriod> ParseChargePeriod(std::string_view text);  // "hour" | "day"

struct ExportRequest {
  Micros from_us = 0;  // window [from_us, to_us): device-hours starting outside are left out
  Micros to_us = 0;
  ChargePeriod period = ChargePeriod::kDay;
  cost::Policy policy;
  cost::IdleHandling idle;
  std::string currency = "USD";             // BillingCurrency (the ledger's meta "currency")
  std::string cluster;                      // BillingAccountId when a device-hour names no cluster
  std::string team_label = "team";          // pod label, inherited from the namespace, for Tags
  std::string provider_name = "gpuledger";  // ProviderName, PublisherName, InvoiceIssuerName
};

enum class RowKind { kWorkload, kIdle, kUnattributed };

// One exported row; all money in nanos, time in GPU-µs.
struct ExportRow {
  Micros period_start_us = 0;
  Micros period_end_us = 0;
  RowKind kind = RowKind::kWorkload;
  std::string cluster;
  std::string namespace_name;  // idle/unattributed: "" (or the platform namespace, idle=namespace:)
  std::string owner_kind;      // Deployment, Job, ... "Pod"; "" for idle/unattributed
  std::string owner_name;
  std::string node;
  std::string gpu_model;
  std::string sharing_mode;
  std::string pricing_class;
  std::string team;           // "" when neither the pod nor its namespace has the label
  GpuMicros quantity_us = 0;  // allocated (compute policy: used) GPU time; idle/unattributed time
  Nanos effective_nanos = 0;  // share of the (reconciled) device-hour prices
  Nanos list_nanos = 0;       // share of the modelled (catalog) device-hour prices
  Nanos billed_nanos = 0;     // share of the bill; 0 unless reconciled
  std::string reconciliation_factor;  // billed/modelled of the node-day, "" when not reconciled
  // Tokens the workload's inference engines served in the period, this row's part of them
  // (AddTokens); unset for a workload that serves none. Set, they are the row's consumed
  // quantity (FOCUS ConsumedUnit "Tokens"), what the inference charge bought.
  std::optional<std::int64_t> tokens;

  std::string ResourceId() const;  // "ns/Kind/name", "<node>/idle", "<node>/unattributed"
};

// One consumer of an exported device-hour: who (namespace, owner, pod, labels) and its time.
struct ExportConsumer {
  const ConsumerInfo* consumer = nullptr;
  const LabelMap* labels = nullptr;  // its label sets (ConsumerLabels), where they are kept
  const LabelMap* namespace_labels = nullptr;
  GpuMicros allocated_us = 0;
  GpuMicros compute_us = 0;
};

// Sums export rows device-hour by device-hour: BuildExportRows over rows in memory, the read
// service (ledger/) over its snapshot. Finish gives them in BuildExportRows' order.
class ExportBuilder {
 public:
  explicit ExportBuilder(ExportRequest request);
  // A device-hour inside the request's window: as modelled (catalog prices, and the strings
  // rows are named by) and as priced (reconciled); its node-day's reconciliation or nullptr;
  // its consumers and their split weights, in the same order; the platform namespace's labels
  // (idle handling namespace:, nullptr for none).
  void AddDeviceHour(const DeviceHour& modelled, const DeviceHour& priced,
                     const Reconciliation* reconciliation,
                     std::span<const ExportConsumer> consumers,
                     std::span<const cost::ConsumerWeights> weights,
                     const std::map<std::string, std::string>* platform_labels);
  // The rows; kInvalidArgument naming the first row whose sum does not fit in 64 bits.
  Result<std::vector<ExportRow>> Finish();

 private:
  void Add(ExportRow row, bool keep_zero);

  using RowKey = std::tuple<Micros, int, std::string, std::string, std::string, std::string,
                            std::string, std::string, std::string, std::string>;
  const ExportRequest request_;
  std::map<RowKey, ExportRow> rows_;
  Status overflow_ = Status::Ok();
};

// Tokens by (period start, workload "namespace/Kind/name"), as a workload's engines served them.
using WorkloadTokens = std::map<std::pair<Micros, std::string>, std::int64_t>;
// Gives each workload's tokens of a period to its rows of that period (several where it ran on
// several nodes, models or teams), split by their effective cost, exactly (Apportion: by their
// GPU time where they cost nothing); a workload's tokens with no row of the period are not
// given (its GPUs were no part of the window).
void AddTokens(std::vector<ExportRow>& rows, const WorkloadTokens& tokens);

// Builds the rows. `devices` carry modelled prices; `reconciliations` are applied here (pass
// every device-hour of each UTC day the window touches, so a node-day scales as a whole; rows
// outside the window are then left out). Deterministic order: period, kind, resource, node, ...
Result<std::vector<ExportRow>> BuildExportRows(const ExportRequest& request,
                                               std::span<const DeviceHour> devices,
                                               std::span<const UsageRow> usage,
                                               std::span<const Reconciliation> reconciliations);

// The FOCUS 1.2 header, in output order (FOCUS columns alphabetically, then x_ columns).
std::span<const std::string_view> FocusColumnNames();

// FOCUS 1.2 CSV: the header above, one line per row, decimals exact, dates ISO 8601 UTC.
std::string RenderFocusCsv(const ExportRequest& request, std::span<const ExportRow> rows);
// Its parts, for a writer of rows a part at a time: the header line, and the rows' lines.
std::string FocusCsvHeader();
std::string RenderFocusRows(const ExportRequest& request, std::span<const ExportRow> rows);

// gpuledger's own CSV of the same rows: integers only (nanos, GPU-µs), RFC 3339 periods.
std::string RenderPlainCsv(std::span<const ExportRow> rows);
// Its parts: the header line, and the rows' lines.
std::string PlainCsvHeader();
std::string RenderPlainRows(std::span<const ExportRow> rows);

// What `/api/v1/export/focus` serves: RenderFocusCsv(BuildExportRows(...)).
Result<std::string> ExportFocusCsv(const ExportRequest& request,
                                   std::span<const DeviceHour> devices,
                                   std::span<const UsageRow> usage,
                                   std::span<const Reconciliation> reconciliations);

}  // namespace gpuledger::billing
