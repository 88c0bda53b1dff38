#include "cli/reconcile_command.h"

#include <fmt/format.h>

#include "cli/exit_code.h"
#include "cli/open_ledger.h"
#include "common/money.h"
#include "common/time_util.h"
#include "io/file_util.h"
#include "ledger/billing_reads.h"
#include "store/ledger_store.h"

namespace gpuledger::cli {

int RunReconcile(const ReconcileOptions& o, std::ostream& out, std::ostream& err) {
  auto content = ReadFile(o.bill);
  if (!content) {
    err << "error: --bill: " << content.error().message << "\n";
    return 2;
  }
  auto store = OpenExistingLedger("--db", o.db);
  if (!store) return Fail(err, store.error());
  auto result = ledger::ImportBill(**store, *content, o.bill, o.imported_at_us);
  if (!result) return Fail(err, result.error());
  // A bill of many unknown rows says so without flooding the terminal, and an id of megabytes
  // is shown by its start (issue 58: a 20 MB ResourceId was echoed whole).
  constexpr std::size_t kWarningsShown = 100, kIdShown = 200;
  for (std::size_t i = 0; i < result->plan.warnings.size() && i < kWarningsShown; ++i) {
    const billing::BillWarning& w = result->plan.warnings[i];
    const std::string id = w.resource_id.size() <= kIdShown
                               ? w.resource_id
                               : fmt::format("{}... ({} bytes)", w.resource_id.substr(0, kIdShown),
                                             w.resource_id.size());
    err << fmt::format("warning: {}:{}: {:?} ({} billed): {}\n", o.bill, w.line, id,
                       DecimalFromNanos(w.billed_nanos), w.message);
  }
  if (result->plan.warnings.size() > kWarningsShown)
    err << fmt::format("warning: {}: {} more rows matched no node-day\n", o.bill,
                       result->plan.warnings.size() - kWarningsShown);
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
