#include "cli/report_command.h"

#include <cstdlib>
#include <filesystem>

#include <httplib.h>

#include <fmt/format.h>

#include "billing/ledger_reads.h"
#include "cli/format.h"
#include "io/file_util.h"
#include "common/time_util.h"
#include "report/report_json.h"
#include "report/window.h"

namespace gpuledger::cli {

int ExitCodeFor(const Error& error) { return error.code == ErrorCode::kInvalidArgument ? 2 : 1; }

Result<store::TimeRange> ResolveWindow(std::string_view window, const store::TimeRange& extent) {
  auto range = report::ResolveWindow(window, extent.from_us, extent.to_us);
  if (!range) return InvalidArgument("--" + range.error().message);
  return store::TimeRange{range->first, range->second};
}

Result<report::Report> BuildReportFromStore(store::LedgerStore& store, const ReportOptions& o) {
  auto by = report::ParseGroupBy(o.by);
  if (!by) return by.error();
  auto policy = cost::ParsePolicy(o.policy);
  if (!policy) return InvalidArgument("--policy: " + policy.error().message);
  auto idle = cost::ParseIdleHandling(o.idle);
  if (!idle) return InvalidArgument("--idle: " + idle.error().message);
  auto extent = store.Extent();
  if (!extent) return extent.error();
  auto range = ResolveWindow(o.window, *extent);
  if (!range) return range.error();
  // Reconciled node-days at their bill (billing/ledger_reads.h).
  auto devices = billing::ReadPricedDeviceHours(store, *range);
  if (!devices) return devices.error();
  auto usage = store.ReadUsage(*range);
  if (!usage) return usage.error();
  return report::BuildReport(*devices, *usage, *by, *policy, *idle, range->from_us,
                             range->to_us);
}

namespace {

// Reads the report from a running server's /api/v1/report (the same JSON document).
Result<report::Report> FetchReport(const ReportOptions& o) {
  std::string url = o.server;
  if (url.starts_with("http://")) url = url.substr(7);
  if (url.starts_with("https://"))
    return InvalidArgument("--server: https is not supported yet; use http:// (or a local proxy)");
  while (url.ends_with("/")) url.pop_back();
  auto colon = url.rfind(':');
  if (url.empty() || colon == std::string::npos)
    return InvalidArgument(fmt::format("--server '{}': expected http://HOST:PORT", o.server));
  int port = std::atoi(url.substr(colon + 1).c_str());
  if (port <= 0 || port > 65535)
    return InvalidArgument(fmt::format("--server '{}': expected http://HOST:PORT", o.server));
  httplib::Client client(url.substr(0, colon), port);
  client.set_connection_timeout(5, 0);
  client.set_read_timeout(60, 0);
  httplib::Headers headers;
  if (!o.token_file.empty()) {
    auto token = ReadFile(o.token_file);
    if (!token) return InvalidArgument("--token-file: " + token.error().message);
    std::string t = *token;
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
    headers.emplace("Authorization", "Bearer " + t);
  }
  httplib::Params params{{"window", o.window}, {"aggregate", o.by}, {"policy", o.policy},
                         {"idle", o.idle}};
  auto res = client.Get("/api/v1/report", params, headers);
  if (!res)
    return Unavailable(fmt::format("--server {}: {}", o.server, httplib::to_string(res.error())));
  if (res->status != 200) {
    // The server's JSON error names the parameter; pass it on.
    std::string message = res->body;
    while (!message.empty() && message.back() == '\n') message.pop_back();
    return Error{res->status == 400 ? ErrorCode::kInvalidArgument : ErrorCode::kUnavailable,
                 fmt::format("--server {}: HTTP {}: {}", o.server, res->status, message)};
  }
  return report::ReportFromJson(res->body);
}

}  // namespace

int RunReport(const ReportOptions& o, std::ostream& out, std::ostream& err) {
  auto format = ParseFormat(o.format);
  if (!format) {
    err << "error: " << format.error().message << "\n";
    return 2;
  }
  if (!o.server.empty()) {
    if (!o.db.empty()) {
      err << "error: give --db or --server, not both\n";
      return 2;
    }
    auto r = FetchReport(o);
    if (!r) {
      err << "error: " << r.error().message << "\n";
      return ExitCodeFor(r.error());
    }
    out << RenderReport(*r, *format);
    return 0;
  }
  // --db is a ledger spec: an SQLite file (PATH or sqlite:PATH) or a postgres:// URL.
  if (o.db.empty() || (!store::IsPostgresLedgerSpec(o.db) &&
                       !std::filesystem::exists(store::SqliteLedgerPath(o.db)))) {
    err << "error: --db '" << o.db << "': no such ledger file (run `gpuledger demo` to make one)\n";
    return 2;
  }
  auto store = store::OpenLedger(o.db);
  if (!store) {
    err << "error: " << store.error().message << "\n";
    return ExitCodeFor(store.error());
  }
  auto r = BuildReportFromStore(**store, o);
  if (!r) {
    err << "error: " << r.error().message << "\n";
    return ExitCodeFor(r.error());
  }
  out << RenderReport(*r, *format);
  return 0;
}

}  // namespace gpuledger::cli
