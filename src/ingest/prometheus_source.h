#pragma once
// Raw counter samples from a Prometheus-compatible HTTP API (Prometheus, Thanos, Mimir,
// VictoriaMetrics), hour by hour, for the exact-delta engine: never increase() or rate(),
// which extrapolate. An instant query of a range selector (`name[1h]` at time t) returns the
// raw samples in (t-1h, t]; samples of one scrape share a timestamp, so they regroup into the
// TargetScrapes the agent exposed.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "http/client.h"
#include "ingest/dcgm_hourly.h"
#include "ingest/sample.h"
#include "ingest/token_ledger.h"

namespace gpuledger::ingest {

// The agent's metric families the ledger needs.
const std::vector<std::string>& LedgerMetricNames();

class PrometheusClient {
 public:
  // `base_url`: "http[s]://host[:port]" (a path prefix such as "/prometheus" or
  // VictoriaMetrics' "/select/0/prometheus" is kept); `auth`: the token, basic auth or CA a
  // managed Prometheus, Thanos or Mimir behind a gateway wants.
  static Result<std::unique_ptr<PrometheusClient>> Create(const std::string& base_url,
                                                          http::ClientAuth auth = {});
  virtual ~PrometheusClient() = default;

  // Raw samples of the ledger's families in (from_us, to_us], grouped per (instance,
  // timestamp), sorted by time. `job` and `instance` labels are removed from the series
  // (`instance` names the TargetScrape). A server that is not Prometheus-compatible gives a
  // clear kInvalidArgument ("... is not a Prometheus HTTP API: ...").
  virtual Result<std::vector<TargetScrape>> Fetch(Micros from_us, Micros to_us) = 0;

  // Inference engines' token series (ingest/token_series.h) in (from_us, to_us], as the TSDB
  // scraped them from the pods: EngineScrapesOf its raw samples. Default (fakes that predate
  // it): none.
  virtual Result<std::vector<EngineScrape>> FetchEngines(Micros from_us, Micros to_us) {
    (void)from_us;
    (void)to_us;
    return std::vector<EngineScrape>{};
  }

  // dcgm-exporter's profiling averages per whole GPU over [hour_us, hour_us + 1 h), when the
  // same Prometheus scrapes dcgm-exporter: `avg_over_time(NAME[3600s])` at the hour's end for
  // each of DcgmProfilingNames() (a classic name wins over its 4.9 rename for the same GPU).
  // Series with a GPU_I_ID (MIG instances) are skipped: the ledger's device_id for an instance
  // cannot be matched to a GPU_I_ID exactly. No dcgm-exporter series: an empty map. The
  // default (fakes that predate it) answers an empty map.
  virtual Result<DcgmHourlyByGpu> FetchDcgmHourly(Micros hour_us) {
    (void)hour_us;
    return DcgmHourlyByGpu{};
  }

  // dcgm-exporter averages FetchDcgmHourly skipped as NaN or infinite (a broken exporter's
  // samples averaged in), since the client was made. Thread-safe.
  virtual std::int64_t skipped_not_finite() const { return 0; }
};

// The dcgm-exporter fields FetchDcgmHourly queries: classic names first, then 4.9's.
const std::vector<std::string>& DcgmProfilingNames();

// Parses one /api/v1/query answer of resultType "vector" for the field `name` (one of
// DcgmProfilingNames()) into `out` (pure; exposed for tests). A GPU's field already set is kept
// (the classic name is parsed first); series without a UUID label, with a non-empty GPU_I_ID,
// or with a value that is not finite are skipped, the last counted in `*not_finite` when given.
Status ParseDcgmVectorResponse(std::string_view body, std::string_view name, DcgmHourlyByGpu& out,
                               std::int64_t* not_finite = nullptr);

// For each hour of `hours` on a whole GPU, asks `client` for the hour's dcgm-exporter averages
// once and fills the rows without activity (FillActivityFromDcgmHourly). Returns the number of
// rows filled, or the client's error (rows then unchanged where not yet filled).
Result<int> FillActivityFromPrometheusDcgm(PrometheusClient& client,
                                           std::vector<LedgerHour>& hours);

// Raw token samples (one TargetScrape per instance and timestamp) as the engines' scrapes: one
// EngineScrape per (pod, timestamp), sorted by time, the pod named by the series' labels as a
// pod scrape config names them (kube-prometheus' PodMonitors: `namespace`, `pod`, `container`;
// `uid` or `pod_uid` where a relabeling adds it). Samples without `namespace` and `pod` name no
// pod: skipped. No process start time comes this way (it is every target's series): an
// engine's restart is seen as a reset.
std::vector<EngineScrape> EngineScrapesOf(std::vector<TargetScrape> raw);

// Parses one /api/v1/query response of resultType "matrix" into samples (pure; exposed for
// tests). Appends to `out`: (instance, timestamp) -> samples.
Status ParseMatrixResponse(std::string_view body, std::vector<TargetScrape>& out);

}  // namespace gpuledger::ingest
