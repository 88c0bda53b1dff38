#include "server/serve_ledger.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "ledger/day_rollup.h"
#include "ledger/report_request.h"
#include "recommendations/rightsize_days.h"
#include "server/http_server.h"
#include "store/ledger_store.h"

namespace gpuledger::server {

StoreOpener ReadConnections(const std::string& db) {
  return [db] { return store::OpenLedgerReadOnly(db); };
}

namespace {

// The end of the days that have ended at `now_us`: the start of the day holding the hours a
// live server may still be writing (ledger::kOpenHours).
Micros EndOfEndedDays(Micros now_us) {
  return (now_us - ledger::kOpenHours * kMicrosPerHour) / kMicrosPerDay * kMicrosPerDay;
}

// Keeps the days of `ended` summed for the reports' default policy and idle handling, and
// gathered for rightsizing; failures said on `err`.
void KeepDaysOf(store::LedgerStore& store, const TimeRange& ended, const std::atomic<bool>& stop,
                std::ostream& err) {
  ledger::ReportRequest defaults;
  ledger::ReportQuery query;
  query.policy = *cost::ParsePolicy(defaults.policy);
  query.idle = *cost::ParseIdleHandling(defaults.idle);
  auto kept = ledger::KeepDays(store, query, ended, [&] { return stop.load(); });
  if (!kept) err << "warning: keeping days summed: " << kept.error().message << "\n";
  auto rightsized = recommendations::KeepRightsizeDays(store, ended, [&] { return stop.load(); });
  if (!rightsized)
    err << "warning: keeping days for rightsizing: " << rightsized.error().message << "\n";
}

}  // namespace

// The end of the ledger's ended days at `now_us`: those before the hours a live writer may
// still write, or every whole day of a ledger nobody has written to for longer (a restored or
// archived one, a benchmark's), whose last hour is far behind `now_us`. nullopt when its extent
// cannot be read (said on `err`).
std::optional<Micros> EndOfKeptDays(store::LedgerStore& store, Micros now_us, TimeRange& extent,
                                    std::ostream& err) {
  auto read = store.Extent();
  if (!read) {
    err << "warning: keeping days summed: " << read.error().message << "\n";
    return std::nullopt;
  }
  extent = *read;
  return EndOfEndedDays(std::min(now_us, extent.to_us + ledger::kOpenHours * kMicrosPerHour));
}

void KeepEndedDays(store::LedgerStore& store, int days, Micros now_us,
                   const std::atomic<bool>& stop, std::ostream& err) {
  TimeRange extent;
  const std::optional<Micros> end = EndOfKeptDays(store, now_us, extent, err);
  if (end && extent.from_us < extent.to_us)
    KeepDaysOf(store, {*end - days * kMicrosPerDay, *end}, stop, err);
}

void KeepEveryEndedDay(store::LedgerStore& store, Micros now_us, const std::atomic<bool>& stop,
                       std::ostream& err) {
  TimeRange extent;
  const std::optional<Micros> end = EndOfKeptDays(store, now_us, extent, err);
  const Micros first = extent.from_us / kMicrosPerDay * kMicrosPerDay;
  if (end && extent.from_us < extent.to_us && first < *end)
    KeepDaysOf(store, {first, *end}, stop, err);
}

Status ServeLedger(ServeLedgerOptions options, const std::atomic<bool>& stop, std::ostream& out,
                   std::ostream& err) {
  auto store =
      options.read_only ? store::OpenLedgerReadOnly(options.db) : store::OpenLedger(options.db);
  if (!store) return store.error();
  if (options.read_only) options.keep_days_every_us = 0;
  // `store` (opened read-write unless read_only, so the schema is current) stays open while
  // serving: a read-only SQLite connection needs the WAL files a writer keeps. The API reads
  // through its own connections, one per concurrent request, so a long report holds up no probe.
  Api api(ReadConnections(options.db), options.token, options.policy, options.catalog,
          options.clock, options.reads);
  if (options.extra_metrics) api.AddMetrics(std::move(options.extra_metrics));
  if (options.sources) api.SetSources(std::move(options.sources));
  auto http = HttpServer::Bind(options.listen, api);
  if (!http && options.fallback_any_port) {
    auto colon = options.listen.rfind(':');
    http = HttpServer::Bind(options.listen.substr(0, colon) + ":0", api);
  }
  if (!http) return http.error();
  const std::string& bound = (*http)->host();
  if (!options.token.required() && !bound.starts_with("127.") && bound != "::1")
    err << fmt::format(
        "warning: the API serves {}:{} without a token: anyone who can reach this port reads "
        "every namespace's costs and findings; give --token-file, or --listen "
        "127.0.0.1:PORT to serve this host alone\n",
        bound, (*http)->port());
  const std::string host = bound == "0.0.0.0" ? "127.0.0.1" : bound;
  const std::string base = fmt::format("http://{}:{}", host, (*http)->port());
  // Short lines, not one of 176 columns (nor of 105 with the addresses).
  out << fmt::format(
      "serving {} at {}/\n  the web UI there (docs/ui.md)\n  the REST API at {}/api/v1/ "
      "(docs/api.md); Ctrl-C stops\n",
      store::DisplayLedgerSpec(options.db), base, base);
  std::unique_ptr<HttpServer> opencost;
  if (!options.opencost_listen.empty()) {
    auto bound_opencost =
        HttpServer::Bind(options.opencost_listen, api, HttpServer::Kind::kOpenCost);
    if (!bound_opencost) return bound_opencost.error();
    opencost = std::move(*bound_opencost);
    out << fmt::format(
        "  OpenCost's read paths, without the token, at http://{}:{}/ "
        "(docs/opencost.md)\n",
        opencost->host() == "0.0.0.0" ? "127.0.0.1" : opencost->host(), opencost->port());
  }
  out.flush();
  std::thread serve([&] { (*http)->Serve(); });
  std::thread serve_opencost([&] {
    if (opencost) opencost->Serve();
  });
  // The idle read-write connection keeps days between the checks for `stop`.
  const Clock& clock = options.clock != nullptr ? *options.clock : TheSystemClock();
  Micros next_keep_us = clock.Now().mono_us;
  bool warm = false;
  while (!stop.load()) {
    if (options.keep_days_every_us > 0 && clock.Now().mono_us >= next_keep_us) {
      KeepEndedDays(**store, options.keep_days, clock.Now().wall_us, stop, err);
      next_keep_us = clock.Now().mono_us + options.keep_days_every_us;
    }
    // Then the snapshot reports read, loaded before the first one asks (at 10,000 GPUs tens of
    // seconds): meanwhile reports read the days just kept.
    if (!warm && !stop.load()) {
      warm = true;
      if (Status s = api.WarmUp(); !s)
        err << "warning: loading the ledger for reports: " << s.error().message << "\n";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  (*http)->Stop();
  if (opencost) opencost->Stop();
  serve.join();
  serve_opencost.join();
  return Status::Ok();
}

}  // namespace gpuledger::server
