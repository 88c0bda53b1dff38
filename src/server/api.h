#pragma once
// The server's read-only REST API over a ledger (design section 7). Handlers are thin: parse
// and validate parameters (unknown ones are errors that name them), read the window's rows from
// the store, build the report (report::BuildReport), serialize. Every JSON error says which
// parameter is wrong. (One ledger read service in their place is issue 32.)
//
//   GET /api/v1/allocation?window=&aggregate=&step=&policy=&idle=&filter=
//       OpenCost-shaped: {"code":200,"status":"success","data":[{<key>: {...}}, ...]} with one
//       set per step; each entry carries gpuledger's exact integer fields (GPU-µs, nanos) and
//       OpenCost-style convenience fields (gpuHours, gpuCost, totalCost in currency units).
//       "__idle__" and "__unattributed__" entries make each set sum to the device cost exactly
//       (when no filter is given). Consumer entries also carry "activity" (SM/tensor/DRAM
//       GPU-µs and GPU-hours, and their "source"), "share_source" and "utilization" (the
//       workload's class with the signals, thresholds and basis it rests on;
//       docs/utilization.md).
//   GET /api/v1/report?window=&aggregate=&policy=&idle=   gpuledger's own report JSON (the
//       `gpuledger report --format json` document; `report --server` reads it)
//   GET /api/v1/devices?window=    per physical GPU: time, busy, idle, unattributed, cost
//   GET /api/v1/export/focus?window=&period=hour|day&policy=&idle=   FOCUS 1.2 CSV (docs/focus.md)
//   GET /api/v1/recommendations?window=&namespace=&workload=&headroom=&percentile=   the
//       rightsizing document of `gpuledger rightsize --format json` (docs/rightsizing.md)
//   GET /api/v1/findings?window=&kind=&namespace=&severity=&state=open|all   guardrail findings
//       with their evidence and cost (the `gpuledger audit --format json` document plus "code"
//       and "status"; docs/guardrails.md)
// Device-hour prices are read reconciled with imported bills where there are any.
//   GET /healthz, /readyz, /metrics (with the last complete hour's cost, server/hour_cost.h)
//
// Bearer-token auth on /api/* when a token is configured. Thread-safe, and no request waits for
// another: each one that reads the ledger borrows its own connection (ConnectionPool), and
// /healthz reads nothing, so probes answer while a long report runs.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "cost/catalog.h"
#include "guardrails/policy.h"
#include "http/response.h"
#include "ingest/source_health.h"
#include "ledger/read_service.h"
#include "server/api_token.h"
#include "server/connection_pool.h"
#include "server/hour_cost.h"
#include "store/ledger_store.h"

namespace gpuledger::server {

struct ApiResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra ones, e.g. Retry-After
  // A body made as it is sent (http::Response::stream): the FOCUS export.
  std::function<bool(const http::SendPart& send)> stream;
};

// How long a heavy request (one that reads its window's rows for itself: recommendations,
// findings, the FOCUS export) waits for the one that is running before it is a 503.
inline constexpr Micros kHeavyWaitUs = 15 * kMicrosPerSecond;

using Params = std::multimap<std::string, std::string>;

class Api {
 public:
  // `open` gives the ledger's read connections (see ConnectionPool). `token`: what /api requires
  // (api_token.h; "" = no auth).
  // `policy`: the guardrail policy /api/v1/findings applies (kinds off, label exemptions,
  // idle-allocation thresholds). `catalog`: the prices of the models /api/v1/recommendations
  // may suggest moving to (the server's --catalog).
  // `clock`: the wall clock /metrics' hour is taken from (nullptr: the system's). `reads`: what
  // the read service keeps in memory. `heavy_wait_us`: how long a heavy request waits for the
  // one running (Heavy).
  Api(StoreOpener open, ApiToken token, guardrails::Policy policy = guardrails::DefaultPolicy(),
      cost::Catalog catalog = cost::DefaultCatalog(), const Clock* clock = nullptr,
      ledger::ReadServiceOptions reads = {}, Micros heavy_wait_us = kHeavyWaitUs);

  // Text appended to /metrics (another component's own series, e.g. the ingest's scrape
  // errors); it must be thread-safe and must not call back into the Api.
  void AddMetrics(std::function<std::string()> render);
  // What /api/v1/sources answers: how the sources the server ingests from fare (thread-safe,
  // never calling back into the Api). Unset: the server ingests nothing.
  void SetSources(std::function<ingest::SourcesHealth()> sources);
  // Loads what reports read (the default policy's days kept summed, held; then the kept
  // snapshot of the ledger's last days), then what findings keep of a month's days, before
  // the first request asks; reports whose days the ledger keeps summed do not wait for the
  // snapshot meanwhile.
  Status WarmUp();
  // Handles one request; `authorization` is the Authorization header's value.
  ApiResponse Handle(const std::string& path, const Params& params,
                     const std::string& authorization);
  // Handles one request to the OpenCost listener (server --opencost-listen): OpenCost's read
  // paths alone (/allocation, /allocation/compute, /model/allocation, /model/getConfigs) and
  // /healthz, without the token, which OpenCost's clients cannot send; anything else a 404.
  ApiResponse HandleOpenCost(const std::string& path, const Params& params);

 private:
  // `answer`'s response, counted by path and status, what a read freed given back.
  ApiResponse Answered(const std::string& path, const std::function<ApiResponse()>& answer);
  ApiResponse Route(const std::string& path, const Params& params, ApiToken::Verdict token);
  ApiResponse Ready();
  ApiResponse Sources(const Params& params);
  // The server's own series; with `costs`, also the last hour's cost by namespace, which the
  // token protects as it protects the reports (issue 58: polling it rebuilt the chargeback).
  ApiResponse Metrics(bool costs);

  // One heavy request at a time: each may take hundreds of MB for its rows (recommendations
  // over 30 days at 240 GPUs, 559 MB), and four at once took 1.9 GB under a pod limit of 1 GiB
  // (issue 58). Others wait heavy_wait_us_ for it, then are answered 503 with Retry-After.
  ApiResponse Heavy(const std::function<ApiResponse()>& answer);

  const StoreOpener open_;  // a second connection for a heavy read split in two (recommendations)
  ConnectionPool pool_;
  std::timed_mutex heavy_;
  const Micros heavy_wait_us_;
  ledger::ReadService reads_;  // reports and allocations, from a kept snapshot
  const ApiToken token_;
  const guardrails::Policy policy_;
  const cost::Catalog catalog_;
  const Clock& clock_;
  HourCost hour_cost_;  // /metrics' gpuledger_server_hour_* series
  std::mutex mu_;       // guards the two below, never held while the ledger is read
  std::vector<std::function<std::string()>> extra_metrics_;
  std::function<ingest::SourcesHealth()> sources_;
  std::map<std::pair<std::string, int>, std::int64_t> requests_;  // (path, status) -> count
};

// A JSON error body: {"code":status,"status":"error","error":message}.
ApiResponse JsonError(int status, const std::string& message);

}  // namespace gpuledger::server
