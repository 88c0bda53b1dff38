#pragma once
// The server's read-only REST API over a ledger (design section 7). Handlers are thin: parse
// and validate parameters (unknown ones are errors that name them), call the report service,
// serialize. Every JSON error says which parameter is wrong.
//
//   GET /api/v1/allocation?window=&aggregate=&step=&policy=&idle=&filter=
//       OpenCost-shaped: {"code":200,"status":"success","data":[{<key>: {...}}, ...]} with one
//       set per step; each entry carries gpuledger's exact integer fields (GPU-µs, nanos) and
//       OpenCost-style convenience fields (gpuHours, gpuCost, totalCost in currency units).
//       "__idle__" and "__unattributed__" entries make each set sum to the device cost exactly
//       (when no filter is given).
//   GET /api/v1/report?window=&aggregate=&policy=&idle=   gpuledger's own report JSON (the
//       `gpuledger report --format json` document; `report --server` reads it)
//   GET /api/v1/devices?window=    per physical GPU: time, busy, idle, unattributed, cost
//   GET /api/v1/export/focus?window=&period=hour|day&policy=&idle=   FOCUS 1.2 CSV (docs/focus.md)
// Device-hour prices are read reconciled with imported bills where there are any.
//   GET /healthz, /readyz, /metrics
//
// Bearer-token auth on /api/* when a token is configured. Thread-safe: handlers share one
// store behind a mutex (SQLite connections are not shared across threads unguarded).

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/result.h"
#include "store/ledger_store.h"

namespace gpuledger::server {

struct ApiResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

using Params = std::multimap<std::string, std::string>;

// Extra endpoints other modules add (e.g. /api/v1/export/focus), under the same auth.
using ExtraHandler = std::function<ApiResponse(store::LedgerStore&, const Params&)>;

class Api {
 public:
  // `store` must outlive the Api. `token`: empty = no auth.
  Api(store::LedgerStore& store, std::string token);

  void AddHandler(const std::string& path, ExtraHandler handler);
  // Text appended to /metrics (another component's own series, e.g. the ingest's scrape
  // errors); called under the Api's lock, so it must not call back into the Api.
  void AddMetrics(std::function<std::string()> render);
  // Handles one request; `authorization` is the Authorization header's value.
  ApiResponse Handle(const std::string& path, const Params& params,
                     const std::string& authorization);

 private:
  ApiResponse Allocation(const Params& params);
  ApiResponse Report(const Params& params);
  ApiResponse Devices(const Params& params);
  ApiResponse ExportFocus(const Params& params);
  ApiResponse Metrics();

  store::LedgerStore& store_;
  std::string token_;
  std::mutex mu_;  // guards store_ and the counters
  std::map<std::string, ExtraHandler> extra_;
  std::vector<std::function<std::string()>> extra_metrics_;
  std::map<std::pair<std::string, int>, std::int64_t> requests_;  // (path, status) -> count
};

// A JSON error body: {"code":status,"status":"error","error":message}.
ApiResponse JsonError(int status, const std::string& message);

}  // namespace gpuledger::server
