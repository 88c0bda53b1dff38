#pragma once
// Closed periods (issue 38): a month's priced statement frozen when finance books it. Closing
// reads the month as any report does and keeps its report at the finest grain (a row per
// consumer, label set and GPU: report::Dimension::Kind::kEntry), with what priced it, as the
// next version of its (month, policy, idle handling). A report over whole months with that
// policy and idle handling then takes each closed one from its latest version, whatever the
// ledger holds now: later prices, bills, catalogs or relabelling change the live figures, never
// a statement, and late data shows as an adjustment in the first open month after its own.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "ledger/reports.h"
#include "model/statement.h"
#include "report/report.h"
#include "store/ledger_store.h"

namespace gpuledger::ledger {

struct CloseRequest {
  std::string period;  // "2026-11"
  std::string policy = "allocation";
  std::string idle = "keep";
  std::string build;  // the gpuledger version closing it
  Micros now_us = 0;  // a month closes once it has ended
};

// Closes `request.period`: kInvalidArgument for a period that is not a month "YYYY-MM", has not
// ended, or whose policy or idle handling does not parse (naming the field). Returns the
// statement written, with its version.
Result<Statement> ClosePeriod(store::LedgerStore& store, const CloseRequest& request);

// The statement's month grouped by `group_by`, regrouped from its body: integer for integer
// the report the ledger gave for that grouping when it was closed. kInternal for a body this
// build cannot read.
Result<report::Report> StatementReport(const Statement& statement,
                                       const std::vector<report::Dimension>& group_by);

// A query's live report, as the edge reads reports (the server's kept snapshot, the CLI's
// reads a day at a time).
using LiveReports = std::function<Result<report::Report>(const ReportQuery&)>;

// The report of a query over whole UTC months some of which are closed (with its policy and
// idle handling), with no step or filter: each closed month's latest statement regrouped, and
// each run of the other months read by `live`, summed, the statements it holds named in month
// order. nullopt for any other query: it reads the ledger alone.
Result<std::optional<report::Report>> PeriodReport(store::LedgerStore& store,
                                                   const ReportQuery& query,
                                                   const LiveReports& live);

// Adds to `report` (PeriodReport's or the live report of `query`) the late data it carries:
// where its window is whole months with no step or filter, each closed month (of the query's
// policy and idle handling) whose first month not closed is one of them gets an adjustment, its
// live figures (read by `live`) less its latest statement's, grouped as the query. So the latest
// statements, the adjustments and the open months' figures sum to the ledger, exactly; an
// adjustment is carried until its month is closed again.
Status AddAdjustments(store::LedgerStore& store, const ReportQuery& query, const LiveReports& live,
                      report::Report& report);

// The report of `query` (no step) as every reader answers it, the CLI and the API alike: closed
// months from their statements (PeriodReport), the rest read by `live`, the late data the
// window carries (AddAdjustments), and what the ledger holds where the window reaches past it
// (report::Report::ledger, from query.extent).
Result<report::Report> ReportOfWindow(store::LedgerStore& store, const ReportQuery& query,
                                      const LiveReports& live);

}  // namespace gpuledger::ledger
