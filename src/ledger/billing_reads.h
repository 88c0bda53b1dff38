#pragma once
// The billing services over a ledger store: the one place billing meets storage. The CLI
// (`gpuledger report|export|reconcile`) and the server (/api/v1/export/focus, reports) call
// these; everything they compute is in the pure functions of bill.h, focus_export.h and
// billing/reconciled_prices.h.

#include <cstddef>
#include <string>
#include <vector>

#include "billing/bill.h"
#include "billing/focus_export.h"
#include "common/result.h"
#include "ledger/export_rows.h"
#include "ledger/read_service.h"
#include "model/ledger.h"
#include "store/ledger_store.h"

namespace gpuledger::ledger {

// Device-hours of `range` priced as billed: reconciled node-days at their bill (read over whole
// UTC days so a node-day scales as a whole, then trimmed back to `range`), others as modelled.
// Σ price_nanos over a reconciled node-day inside `range` == its billed_nanos exactly.
Result<std::vector<DeviceHour>> ReadPricedDeviceHours(store::LedgerStore& store,
                                                      const TimeRange& range);

struct ExportOptions {
  std::string window = "all";         // as `report --window` (report::ResolveWindow)
  std::string period = "day";         // hour | day
  std::string policy = "allocation";  // cost::ParsePolicy
  std::string idle = "keep";          // cost::ParseIdleHandling
  std::string format = "focus";       // focus | csv
  std::string team_label = "team";
};

// An export's options checked against the ledger (window resolved against its extent, currency
// and cluster from its meta: "currency", default USD; "cluster"): what ledger::WriteExport
// takes. Bad options fail with kInvalidArgument naming the option.
struct ResolvedExport {
  billing::ExportRequest request;
  ledger::ExportFormat format = ledger::ExportFormat::kFocus;
};
Result<ResolvedExport> ResolveExport(store::LedgerStore& store, const ExportOptions& options);

// The export document (FOCUS 1.2 CSV or gpuledger's plain CSV) of a ledger, written to `sink`
// a day at a time through `reads` (ledger::WriteExport): window resolved against the ledger's
// extent, currency and cluster from its meta ("currency", default USD; "cluster"). Bad options
// fail with kInvalidArgument naming the option, before anything is written.
Status ExportFromStore(store::LedgerStore& store, ledger::ReadService& reads,
                       const ExportOptions& options, ledger::ExportSink& sink);
// The same document as one string of at most `max_bytes` (0: any size); past it
// kInvalidArgument "window: the export of FROM to TO passes N MiB ...".
Result<std::string> ExportFromStore(store::LedgerStore& store, ledger::ReadService& reads,
                                    const ExportOptions& options, std::size_t max_bytes = 0);
struct ReconcileResult {
  billing::ReconcilePlan
      plan;  // what was recorded (node_days) and the bill rows that matched nothing
};

// Imports a FOCUS CSV bill (`content`, named `bill_file` in messages and in the table) into the
// ledger: parses it, plans per node-day and writes every reconciliation in one transaction.
// Bad rows fail with "file:line:column" (kInvalidArgument) and nothing is written.
Result<ReconcileResult> ImportBill(store::LedgerStore& store, std::string_view content,
                                   const std::string& bill_file, Micros imported_at_us);

}  // namespace gpuledger::ledger
