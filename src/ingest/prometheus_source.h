#pragma once
// Raw counter samples from a Prometheus-compatible HTTP API (Prometheus, Thanos, Mimir,
// VictoriaMetrics), hour by hour, for the exact-delta engine: never increase() or rate(),
// which extrapolate. An instant query of a range selector (`name[1h]` at time t) returns the
// raw samples in (t-1h, t]; samples of one scrape share a timestamp, so they regroup into the
// TargetScrapes the agent exposed.

#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "ingest/sample.h"

namespace gpuledger::ingest {

// The agent's metric families the ledger needs.
const std::vector<std::string>& LedgerMetricNames();

class PrometheusClient {
 public:
  // `base_url`: "http://host:port" (a path prefix such as "/prometheus" or VictoriaMetrics'
  // "/select/0/prometheus" is kept).
  static Result<std::unique_ptr<PrometheusClient>> Create(const std::string& base_url);
  virtual ~PrometheusClient() = default;

  // Raw samples of the ledger's families in (from_us, to_us], grouped per (instance,
  // timestamp), sorted by time. `job` and `instance` labels are removed from the series
  // (`instance` names the TargetScrape). A server that is not Prometheus-compatible gives a
  // clear kInvalidArgument ("... is not a Prometheus HTTP API: ...").
  virtual Result<std::vector<TargetScrape>> Fetch(Micros from_us, Micros to_us) = 0;
};

// Parses one /api/v1/query response of resultType "matrix" into samples (pure; exposed for
// tests). Appends to `out`: (instance, timestamp) -> samples.
Status ParseMatrixResponse(std::string_view body, std::vector<TargetScrape>& out);

}  // namespace gpuledger::ingest
