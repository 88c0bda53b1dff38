#pragma once
// `gpuledger report`: a chargeback report from a ledger file.

#include <ostream>
#include <string>

#include "cli/server_client.h"

#include "common/result.h"
#include "ledger/report_request.h"
#include "report/report.h"
#include "store/ledger_store.h"

namespace gpuledger::cli {

// What to report (the window, grouping, cost policy and idle rule, as the API's) and how to print
// it.
struct ReportOptions : ReadFrom, ledger::ReportRequest {
  std::string format = "table";
  bool wide = false;  // the table with every column, keys whole
};

// Builds the report from an open store (`open_more`: connections of its own for readers of
// more days at once). Errors are bad input (exit 2) or I/O (exit 1).
// With `days_from_rows`: how many whole days of the window had no summed day kept in the ledger
// and were summed from their rows (ledger::ReadServiceStats::days_from_rows).
Result<report::Report> BuildReportFromStore(store::LedgerStore& store, const ReportOptions& o,
                                            const store::StoreOpener& open_more = {},
                                            int* days_from_rows = nullptr);

// Returns the process exit code: 0 ok, 1 failure, 2 bad input.
int RunReport(const ReportOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gpuledger::cli
