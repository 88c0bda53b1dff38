#include "cli/close_command.h"

#include <fmt/format.h>

#include "cli/exit_code.h"
#include "cli/flag_error.h"
#include "cli/open_ledger.h"
#include "common/money.h"
#include "common/time_util.h"
#include "ledger/statements.h"
#include "report/window.h"

namespace gpuledger::cli {

int RunClose(const CloseOptions& o, std::ostream& out, std::ostream& err) {
  auto store = OpenExistingLedger("--db", o.db);
  if (!store) return Fail(err, store.error());
  auto closed = ledger::ClosePeriod(**store, {o.period, o.policy, o.idle, o.build, o.now_us});
  if (!closed) return Fail(err, AsFlagError(closed.error(), {"period", "policy", "idle"}));
  out << fmt::format(
      "closed {} (policy {}, idle {}) as version {}: {} of device cost\n"
      "reports over {} with this policy and idle handling now read this statement\n",
      closed->period, closed->policy, closed->idle, closed->version,
      DecimalFromNanos(closed->total_cost_nanos), closed->period);
  return 0;
}

int RunStatements(const StatementsOptions& o, std::ostream& out, std::ostream& err) {
  if (!o.period.empty() && !report::MonthRange(o.period)) {
    err << fmt::format("error: --period '{}': expected a month as YYYY-MM (2026-11)\n", o.period);
    return 2;
  }
  auto store = OpenExistingLedger("--db", o.db);
  if (!store) return Fail(err, store.error());
  auto statements = (*store)->ReadStatements(o.period);
  if (!statements) return Fail(err, statements.error());
  out << "period,policy,idle,version,closed_at,build,device_cost\n";
  for (const Statement& st : *statements)
    out << fmt::format("{},{},{},{},{},{},{}\n", st.period, st.policy, st.idle, st.version,
                       FormatRfc3339(st.closed_at_us), st.build,
                       DecimalFromNanos(st.total_cost_nanos));
  return 0;
}

}  // namespace gpuledger::cli
