#include "cli/report_command.h"

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cli/exit_code.h"
#include "cli/format.h"
#include "cli/open_ledger.h"
#include "cli/server_client.h"
#include "common/time_util.h"
#include "io/file_util.h"
#include "ledger/read_service.h"
#include "ledger/report_request.h"
#include "ledger/reports.h"
#include "report/report_json.h"
#include "report/window.h"

namespace gpuledger::cli {
namespace {

const ledger::FieldNames kFlagNames{"--window", "--by", "--policy", "--idle", "--step", "--filter"};

}  // namespace

Result<report::Report> BuildReportFromStore(store::LedgerStore& store, const ReportOptions& o,
                                            const store::StoreOpener& open_more,
                                            int* days_from_rows) {
  auto extent = store.Extent();
  if (!extent) return extent.error();
  auto query = ledger::ParseReportRequest(o, *extent, kFlagNames);
  if (!query) return query.error();
  ledger::ReadService reads(ledger::OneQueryOptions(open_more));
  auto report = reads.Report(store, *query);
  if (days_from_rows != nullptr) *days_from_rows = static_cast<int>(reads.stats().days_from_rows);
  return report;
}

namespace {

// Reads the report from a running server's /api/v1/report (the same JSON document).
Result<report::Report> FetchReport(const ReportOptions& o) {
  std::vector<std::pair<std::string, std::string>> params = {
      {"window", o.window}, {"aggregate", o.group_by}, {"policy", o.policy}, {"idle", o.idle}};
  if (!o.filter.empty()) params.emplace_back("filter", o.filter);
  auto body = GetFromServer(o.Server(), "/api/v1/report", params);
  if (!body) return body.error();
  return report::ReportFromJson(*body);
}

// A window past what the ledger holds reads as zeros there: say so, not leave it to guess.
void NoteWhatTheLedgerHolds(const report::Report& r, std::ostream& err) {
  if (!r.ledger) return;
  err << fmt::format(
      "note: the ledger holds {} to {}; the window {} to {} reaches {} it, where nothing is "
      "recorded\n",
      FormatRfc3339(r.ledger->from_us), FormatRfc3339(r.ledger->to_us), FormatRfc3339(r.from_us),
      FormatRfc3339(r.to_us), report::ReachPast({r.from_us, r.to_us}, *r.ledger));
}

// Reads never write, so whole days no writer kept summed are summed from their rows each time:
// say why this report was slower than it needs to be, and what keeps them.
void NoteDaysFromRows(int days, std::ostream& err) {
  if (days == 0) return;
  err << fmt::format(
      "note: {} whole day{} of the window {} not kept summed in this ledger, so {} summed from "
      "{} rows, which is slower; a server writing the ledger keeps its ended days (`gpuledger "
      "server`, also with --backfill-only)\n",
      days, days == 1 ? "" : "s", days == 1 ? "is" : "are", days == 1 ? "it was" : "they were",
      days == 1 ? "its" : "their");
}

}  // namespace

int RunReport(const ReportOptions& o, std::ostream& out, std::ostream& err) {
  auto format = ParseFormat(o.format);
  if (!format) return Fail(err, format.error());
  if (!o.server.empty() && !o.db.empty()) {
    err << "error: give --db or --server, not both\n";
    return 2;
  }
  if (o.db.empty()) {  // --server, or through the API server (server_client.h)
    auto r = FetchReport(o);
    if (!r) return Fail(err, r.error());
    out << RenderReport(*r, *format, o.wide, TerminalColumns());
    NoteWhatTheLedgerHolds(*r, err);
    return 0;
  }
  // --db is a ledger spec: an SQLite file (PATH or sqlite:PATH) or a postgres:// URL.
  auto store = OpenExistingLedger("--db", o.db);
  if (!store) return Fail(err, store.error());
  int days_from_rows = 0;
  auto r = BuildReportFromStore(
      **store, o, [&] { return OpenExistingLedger("--db", o.db); }, &days_from_rows);
  if (!r) return Fail(err, r.error());
  out << RenderReport(*r, *format, o.wide, TerminalColumns());
  NoteWhatTheLedgerHolds(*r, err);
  NoteDaysFromRows(days_from_rows, err);
  return 0;
}

}  // namespace gpuledger::cli
