#include "cli/reconcile_command.h"

#include <fmt/format.h>

#include "billing/ledger_reads.h"
#include "cli/open_ledger.h"
#include "cli/report_command.h"
#include "common/money.h"
#include "common/time_util.h"
#include "io/file_util.h"
#include "store/ledger_store.h"

namespace gpuledger::cli {

int RunReconcile(const ReconcileOptions& o, std::ostream& out, std::ostream& err) {
  auto content = ReadFile(o.bill);
  if (!content) {
    err << "error: --bill: " << content.error().message << "\n";
    return 2;
  }
  auto store = OpenExistingLedger("--db", o.db);
  if (!store) {
    err << "error: " << store.error().message << "\n";
    return ExitCodeFor(store.error());
  }
  auto result = billing::ImportBill(**store, *content, o.bill, o.imported_at_us);
  if (!result) {
    err << "error: " << result.error().message << "\n";
    return ExitCodeFor(result.error());
  }
  for (const billing::BillWarning& w : result->plan.warnings) {
    err << fmt::format("warning: {}:{}: {} ({} billed): {}\n", o.bill, w.line, w.resource_id,
                       DecimalFromNanos(w.billed_nanos), w.message);
  }
  out << fmt::format("reconciled {} node-day(s) from {}\n", result->plan.node_days.size(), o.bill);
  out << "node,day,modelled,billed,factor,factor_ppm\n";
  for (const Reconciliation& r : result->plan.node_days) {
    out << fmt::format("{},{},{},{},{},{}\n", r.node, FormatRfc3339(r.day_us).substr(0, 10),
                       DecimalFromNanos(r.modelled_nanos), DecimalFromNanos(r.billed_nanos),
                       r.factor, r.factor_ppm);
  }
  if (!result->plan.warnings.empty())
    out << fmt::format("{} bill row(s) matched no node-day (see warnings)\n",
                       result->plan.warnings.size());
  return 0;
}

}  // namespace gpuledger::cli
