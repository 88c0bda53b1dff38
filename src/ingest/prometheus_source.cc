#include "ingest/prometheus_source.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/rounding.h"
#include "common/time_util.h"
#include "http/client.h"
#include "ingest/agent_series.h"
#include "ingest/counter_ledger.h"
#include "ingest/finding_ingest.h"
#include "ingest/token_series.h"

namespace gpuledger::ingest {
namespace {

using nlohmann::json;

Status ParseMatrixResponseOrThrow(std::string_view body, std::vector<TargetScrape>& out);

class HttpPrometheusClient : public PrometheusClient {
 public:
  HttpPrometheusClient(std::string base, http::ClientAuth auth, std::string display)
      : base_(std::move(base)), auth_(std::move(auth)), display_(std::move(display)) {}

  Result<std::vector<TargetScrape>> Fetch(Micros from_us, Micros to_us) override {
    auto raw = RawSamples(LedgerMetricNames(), from_us, to_us);
    if (!raw) return raw.error();
    // Regroup: one TargetScrape per (instance, timestamp), in time order.
    std::map<std::pair<Micros, std::string>, TargetScrape> grouped;
    for (auto& t : *raw) {
      TargetScrape& g = grouped[{t.at_us, t.instance}];
      g.instance = t.instance;
      g.at_us = t.at_us;
      for (auto& s : t.samples) g.samples.push_back(std::move(s));
    }
    std::vector<TargetScrape> out;
    out.reserve(grouped.size());
    for (auto& [key, t] : grouped) out.push_back(std::move(t));
    return out;
  }

  Result<std::vector<EngineScrape>> FetchEngines(Micros from_us, Micros to_us) override {
    auto raw = RawSamples(TokenSeriesNames(), from_us, to_us);
    if (!raw) return raw.error();
    return EngineScrapesOf(std::move(*raw));
  }

  Result<DcgmHourlyByGpu> FetchDcgmHourly(Micros hour_us) override {
    DcgmHourlyByGpu out;
    const std::string time =
        fmt::format("{:.3f}", static_cast<double>(hour_us + kMicrosPerHour) / 1e6);
    for (const std::string& name : DcgmProfilingNames()) {
      // avg_over_time's window is left-open, (end - 1h, end]: the hour's own samples.
      auto body = Query(fmt::format("avg_over_time({}[3600s])", name), time);
      if (!body) return body.status();
      std::int64_t not_finite = 0;
      if (Status s = ParseDcgmVectorResponse(*body, name, out, &not_finite); !s.ok())
        return InvalidArgument(fmt::format("{}: {}: {}", display_, name, s.error().message));
      skipped_not_finite_ += not_finite;
    }
    return out;
  }

  std::int64_t skipped_not_finite() const override { return skipped_not_finite_.load(); }

 private:
  // The raw samples of the families `names` in (from_us, to_us], one TargetScrape per series
  // and timestamp as the matrix answers come.
  Result<std::vector<TargetScrape>> RawSamples(const std::vector<std::string>& names,
                                               Micros from_us, Micros to_us) {
    std::vector<TargetScrape> raw;
    const Micros range = to_us - from_us;
    if (range <= 0) return raw;
    // Whole seconds: the range selector's unit. Timestamps are sent with millisecond precision.
    const std::string window =
        fmt::format("{}s", (range + kMicrosPerSecond - 1) / kMicrosPerSecond);
    const std::string time = fmt::format("{:.3f}", static_cast<double>(to_us) / 1e6);
    for (const std::string& name : names) {
      auto body = Query(fmt::format("{}[{}]", name, window), time);
      if (!body) return body.status();
      if (Status s = ParseMatrixResponse(*body, raw); !s.ok())
        return InvalidArgument(fmt::format("{}: {}", display_, s.error().message));
    }
    // Samples exactly at from_us belong to the previous window: (from, to].
    std::erase_if(raw,
                  [&](const TargetScrape& t) { return t.at_us <= from_us || t.at_us > to_us; });
    return raw;
  }

  // One instant query at `time` (seconds, as the API takes it): the answer's body. A 400 or 422
  // carries the API's own error, which the response parsers report.
  Result<std::string> Query(const std::string& promql, const std::string& time) {
    http::ClientRequest request{base_ + "/api/v1/query", {{"query", promql}, {"time", time}}};
    request.timeout_us = 120 * kMicrosPerSecond;
    request.max_bytes = 1u << 30;  // a month of a large cluster's series in one answer
    auto res = http::Get(request, auth_);
    if (!res) return Error{res.error().code, fmt::format("{}: {}", display_, res.error().message)};
    if (res->status != 200 && res->status != 400 && res->status != 422)
      return InvalidArgument(
          fmt::format("{} is not a Prometheus HTTP API: /api/v1/query answered HTTP {}", display_,
                      res->status));
    return std::move(res->body);
  }

  std::string base_;  // the URL without a trailing slash; a path prefix is kept
  http::ClientAuth auth_;
  std::string display_;
  std::atomic<std::int64_t> skipped_not_finite_{0};
};

}  // namespace

std::vector<EngineScrape> EngineScrapesOf(std::vector<TargetScrape> raw) {
  std::map<std::pair<Micros, ConsumerRef>, EngineScrape> grouped;
  for (TargetScrape& t : raw)
    for (Sample& s : t.samples) {
      ConsumerRef pod{std::string(Label(s.labels, "namespace")),
                      std::string(Label(s.labels, "pod")), PodUid(""),
                      std::string(Label(s.labels, "container"))};
      if (pod.namespace_name.empty() || pod.pod.empty()) continue;
      std::string_view uid = Label(s.labels, "uid");
      pod.pod_uid = PodUid(std::string(uid.empty() ? Label(s.labels, "pod_uid") : uid));
      EngineScrape& e = grouped[{t.at_us, pod}];
      e.consumer = std::move(pod);
      e.at_us = t.at_us;
      e.samples.push_back(std::move(s));
    }
  std::vector<EngineScrape> out;
  out.reserve(grouped.size());
  for (auto& [key, e] : grouped) out.push_back(std::move(e));
  return out;
}

// The engine's own list: a series the engine reads that this source did not query would be
// lost silently (the hand-kept list here had missed peak memory and unattributed memory-time).
const std::vector<std::string>& LedgerMetricNames() {
  // The engine's counters and the guardrail findings' history (ingest/finding_ingest.h).
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> out = FedSeriesNames();
    out.insert(out.end(), FindingSeriesNames().begin(), FindingSeriesNames().end());
    return out;
  }();
  return kNames;
}

namespace {
// The Prometheus HTTP API's envelope: {"status":"success","data":{"resultType":<type>,...}}.
// The data object, or what was wrong with the answer.
Result<json> ApiData(std::string_view body, std::string_view result_type) {
  json j;
  try {
    j = json::parse(body);
  } catch (const std::exception&) {
    std::string head(body.substr(0, 80));
    return InvalidArgument(fmt::format("not a Prometheus HTTP API answer (not JSON): '{}'", head));
  }
  if (!j.is_object() || !j.contains("status"))
    return InvalidArgument("not a Prometheus HTTP API answer (no 'status')");
  if (j["status"] != "success")
    return InvalidArgument(
        fmt::format("query failed: {}: {}", j.value("errorType", "?"), j.value("error", "?")));
  json data = j.value("data", json::object());
  if (data.value("resultType", "") != result_type)
    return InvalidArgument(
        fmt::format("expected a {} result, got '{}'", result_type, data.value("resultType", "")));
  return data;
}

Status ParseMatrixResponseOrThrow(std::string_view body, std::vector<TargetScrape>& out) {
  auto api = ApiData(body, "matrix");
  if (!api) return api.status();
  const json& data = *api;
  std::map<std::pair<Micros, std::string>, std::size_t> index;
  const json result = data.value("result", json::array());
  for (const json& series : result) {
    Sample base;
    std::string instance;
    // A named copy: iterating items() of a temporary would dangle (range-for lifetime).
    const json metric = series.value("metric", json::object());
    for (const auto& [k, v] : metric.items()) {
      if (k == "__name__")
        base.name = v.get<std::string>();
      else if (k == "instance")
        instance = v.get<std::string>();
      else if (k != "job")
        base.labels.emplace_back(k, v.get<std::string>());
    }
    std::sort(base.labels.begin(), base.labels.end());
    const json values = series.value("values", json::array());
    for (const json& point : values) {
      if (!point.is_array() || point.size() != 2) return InvalidArgument("malformed sample pair");
      // Whole milliseconds, as Prometheus keeps them; an instant past the years gpuledger
      // takes is the answer's error, never a wrapped timestamp.
      const double seconds = point[0].get<double>();
      const std::optional<std::int64_t> ms = RoundToInt64(seconds * 1e3);
      Result<Micros> at_us = InvalidArgument("not a 64-bit number of milliseconds");
      if (ms) at_us = InstantFromUnixMillis(*ms);
      if (!at_us)
        return InvalidArgument(
            fmt::format("sample timestamp {} s is outside 1970-01-01 .. 9999-12-31", seconds));
      const Micros at = *at_us;
      Sample s = base;
      s.value = std::stod(point[1].get<std::string>());
      auto key = std::pair{at, instance};
      auto it = index.find(key);
      if (it == index.end()) {
        index[key] = out.size();
        out.push_back(TargetScrape{instance, at, {}});
        it = index.find(key);
      }
      out[it->second].samples.push_back(std::move(s));
    }
  }
  return Status::Ok();
}

}  // namespace

Status ParseMatrixResponse(std::string_view body, std::vector<TargetScrape>& out) {
  try {
    return ParseMatrixResponseOrThrow(body, out);
  } catch (const std::exception& e) {
    // A JSON document of the wrong shape: never let the library's exception cross the module.
    return InvalidArgument(fmt::format("unexpected answer shape: {}", e.what()));
  }
}

const std::vector<std::string>& DcgmProfilingNames() {
  static const std::vector<std::string> kNames = {
      "DCGM_FI_PROF_SM_ACTIVE",          "DCGM_FI_PROF_SM_OCCUPANCY",
      "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE",
      "DCGM_FI_PROF_SM_UTIL_RATIO",      "DCGM_FI_PROF_SM_OCCUPANCY_RATIO",
      "DCGM_FI_PROF_TENSOR_UTIL_RATIO",  "DCGM_FI_PROF_DRAM_UTIL_RATIO"};
  return kNames;
}

namespace {
std::optional<double> DcgmHourlyFractions::*FieldFor(std::string_view name) {
  if (name == "DCGM_FI_PROF_SM_ACTIVE" || name == "DCGM_FI_PROF_SM_UTIL_RATIO")
    return &DcgmHourlyFractions::sm_active;
  if (name == "DCGM_FI_PROF_SM_OCCUPANCY" || name == "DCGM_FI_PROF_SM_OCCUPANCY_RATIO")
    return &DcgmHourlyFractions::sm_occupancy;
  if (name == "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" || name == "DCGM_FI_PROF_TENSOR_UTIL_RATIO")
    return &DcgmHourlyFractions::tensor_active;
  if (name == "DCGM_FI_PROF_DRAM_ACTIVE" || name == "DCGM_FI_PROF_DRAM_UTIL_RATIO")
    return &DcgmHourlyFractions::dram_active;
  return nullptr;
}

Status ParseDcgmVectorResponseOrThrow(std::string_view body, std::string_view name,
                                      DcgmHourlyByGpu& out, std::int64_t* not_finite) {
  auto field = FieldFor(name);
  if (field == nullptr)
    return InvalidArgument(fmt::format("'{}' is not a dcgm-exporter profiling field", name));
  auto api = ApiData(body, "vector");
  if (!api) return api.status();
  const json& data = *api;
  const json result = data.value("result", json::array());
  for (const json& series : result) {
    const json metric = series.value("metric", json::object());
    // dcgm-exporter 1.x spelled the label `uuid`.
    std::string uuid = metric.value("UUID", metric.value("uuid", std::string()));
    if (uuid.empty() || !metric.value("GPU_I_ID", std::string()).empty()) continue;
    const json value = series.value("value", json::array());
    if (!value.is_array() || value.size() != 2) return InvalidArgument("malformed sample pair");
    const double v = std::strtod(value[1].get<std::string>().c_str(), nullptr);
    if (!std::isfinite(v)) {
      if (not_finite != nullptr) ++*not_finite;
      continue;
    }
    std::optional<double>& slot = out[uuid].*field;
    if (!slot) slot = v;
  }
  return Status::Ok();
}
}  // namespace

Status ParseDcgmVectorResponse(std::string_view body, std::string_view name, DcgmHourlyByGpu& out,
                               std::int64_t* not_finite) {
  try {
    return ParseDcgmVectorResponseOrThrow(body, name, out, not_finite);
  } catch (const std::exception& e) {
    return InvalidArgument(fmt::format("unexpected answer shape: {}", e.what()));
  }
}

Result<int> FillActivityFromPrometheusDcgm(PrometheusClient& client,
                                           std::vector<LedgerHour>& hours) {
  std::map<Micros, DcgmHourlyByGpu> by_hour;  // asked once per hour, only when a row could use it
  int filled = 0;
  for (LedgerHour& h : hours) {
    if (h.device.sharing == SharingMode::kMig) continue;
    const bool wanted = std::any_of(h.usage.begin(), h.usage.end(), [](const UsageRow& r) {
      return r.activity_quality == Quality::kNone && r.compute_us > 0;
    });
    if (!wanted) continue;
    auto it = by_hour.find(h.device.hour_us);
    if (it == by_hour.end()) {
      auto fetched = client.FetchDcgmHourly(h.device.hour_us);
      if (!fetched) return fetched.error();
      it = by_hour.emplace(h.device.hour_us, std::move(*fetched)).first;
    }
    if (auto gpu = it->second.find(h.device.gpu.value); gpu != it->second.end())
      filled += FillActivityFromDcgmHourly(h, gpu->second);
  }
  return filled;
}

Result<std::unique_ptr<PrometheusClient>> PrometheusClient::Create(const std::string& base_url,
                                                                   http::ClientAuth auth) {
  auto url = http::ParseUrl(base_url);
  if (!url)
    return InvalidArgument(
        fmt::format("prometheus URL: {} (a path prefix such as /prometheus is "
                    "kept)",
                    url.error().message));
  std::string base = base_url;
  while (base.ends_with("/")) base.pop_back();
  return std::unique_ptr<PrometheusClient>(
      new HttpPrometheusClient(std::move(base), std::move(auth), url->shown));
}

}  // namespace gpuledger::ingest
