#include "server/api.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/json_text.h"
#include "common/json_writer.h"
#include "common/time_util.h"
#include "ledger/billing_reads.h"
#include "ledger/devices.h"
#include "ledger/findings.h"
#include "ledger/report_request.h"
#include "ledger/reports.h"
#include "ledger/rightsize.h"
#include "ledger/statements.h"
#include "ledger/tokens.h"
#include "prometheus/exposition_writer.h"
#include "prometheus/metric_table.h"
#include "recommendations/rightsize_json.h"
#include "report/report.h"
#include "report/report_json.h"
#include "report/token_json.h"
#include "report/window.h"
#include "server/api_allocation.h"
#include "server/api_export.h"
#include "server/api_params.h"

namespace gpuledger::server {
namespace {

using nlohmann::json;

}  // namespace

ApiResponse JsonError(int status, const std::string& message) {
  return {status, "application/json",
          JsonText(json{{"code", status}, {"status", "error"}, {"error", message}}) + "\n"};
}

namespace {

ApiResponse Report(store::LedgerStore& store, ledger::ReadService& reads, const Params& p) {
  if (auto u = UnknownParam(p, {"window", "aggregate", "policy", "idle", "filter", "step"});
      !u.empty())
    return JsonError(
        400,
        fmt::format("unknown parameter '{}' (window, aggregate, policy, idle, filter, step)", u));
  auto query = ParseReportParams(store, p);
  if (!query) return FromError(query.error());
  if (query->step == 0) {
    auto r = reads.Report(store, *query);
    if (!r) return ReportError(r.error());
    return {200, "application/json", report::ReportToJson(*r)};
  }
  // With a step: the window's report and each step's cost, summed in one pass.
  auto stepped = reads.ReportAndSteps(store, *query);
  if (!stepped) return ReportError(stepped.error());
  // Each step's cost by key: at least its key, quoted, and a number.
  std::size_t answer_bytes = 0;
  for (const report::Report& step : stepped->steps)
    for (const report::Row& row : step.rows) answer_bytes += row.key.size() + 24;
  if (answer_bytes > kMaxAnswerBytes)
    return AnswerTooLarge(stepped->steps.size(), stepped->steps.size());
  if (!report::ReachPast(query->window, query->extent).empty())
    stepped->window.ledger = query->extent;
  return {200, "application/json", report::ReportToJson(stepped->window, stepped->steps)};
}

// The closed statements, every version (issue 38): headings only, each with its total and
// what priced it; a report over the month reads the latest of its policy and idle handling.
ApiResponse Statements(store::LedgerStore& store, const Params& p) {
  if (auto u = UnknownParam(p, {"period"}); !u.empty())
    return JsonError(400, fmt::format("unknown parameter '{}' (period)", u));
  const std::string period = ParamOr(p, "period", "");
  if (!period.empty() && !report::MonthRange(period))
    return JsonError(400, fmt::format("parameter 'period': '{}' is not a month YYYY-MM", period));
  auto statements = store.ReadStatements(period);
  if (!statements) return FromError(statements.error());
  json out = json::array();
  for (const Statement& st : *statements) {
    json provenance = json::parse(st.provenance, nullptr, /*allow_exceptions=*/false);
    out.push_back(
        {{"period", st.period},
         {"window", {{"start", FormatRfc3339(st.from_us)}, {"end", FormatRfc3339(st.to_us)}}},
         {"policy", st.policy},
         {"idle_handling", st.idle},
         {"version", st.version},
         {"closed_at", FormatRfc3339(st.closed_at_us)},
         {"build", st.build},
         {"device_cost_nanos", st.total_cost_nanos},
         {"provenance", provenance}});
  }
  return {200, "application/json", JsonText(json{{"statements", out}}, 2) + "\n"};
}

// `doc` with WriteLedgerReach's "ledger" when `window` reaches past what the ledger holds.
void AddLedgerReach(json& doc, const TimeRange& window, const TimeRange& extent) {
  if (report::ReachPast(window, extent).empty()) return;
  JsonWriter w;
  w.BeginObject();
  report::WriteLedgerReach(w, window, extent);
  w.EndObject();
  doc["ledger"] = json::parse(std::move(w).Take())["ledger"];
}

ApiResponse Recommendations(store::LedgerStore& store, ledger::ReadService& reads, const Params& p,
                            const cost::Catalog& catalog, const StoreOpener& open_more) {
  if (auto u = UnknownParam(p, {"window", "namespace", "workload", "headroom", "percentile"});
      !u.empty())
    return JsonError(
        400, fmt::format(
                 "unknown parameter '{}' (window, namespace, workload, headroom, percentile)", u));
  recommendations::RightsizeQuery q;
  q.window = ParamOr(p, "window", q.window);
  q.namespace_name = ParamOr(p, "namespace", "");
  q.workload = ParamOr(p, "workload", "");
  q.headroom = ParamOr(p, "headroom", q.headroom);
  q.percentile = ParamOr(p, "percentile", q.percentile);
  auto answer = ledger::ReadRightsizePlan(store, &reads, q, catalog, open_more);
  if (!answer)
    return ParameterError(answer.error(),
                          {"window", "namespace", "workload", "headroom", "percentile"});
  std::string body = recommendations::RightsizeToJson(*answer);
  if (auto extent = store.Extent(); extent && !report::ReachPast(answer->window, *extent).empty()) {
    json doc = json::parse(body);
    AddLedgerReach(doc, answer->window, *extent);
    body = JsonText(doc, 2) + "\n";
  }
  return {200, "application/json", std::move(body)};
}

// What a token cost (docs/tokens.md): the parameters `gpuledger tokens` sends.
ApiResponse Tokens(store::LedgerStore& store, ledger::ReadService& reads, const Params& p) {
  if (auto u = UnknownParam(p, {"window", "aggregate", "policy", "idle"}); !u.empty())
    return JsonError(400,
                     fmt::format("unknown parameter '{}' (window, aggregate, policy, idle)", u));
  ledger::TokenRequest request;
  request.window = ParamOr(p, "window", request.window);
  request.group_by = ParamOr(p, "aggregate", request.group_by);
  request.policy = ParamOr(p, "policy", request.policy);
  request.idle = ParamOr(p, "idle", request.idle);
  ledger::FieldNames names;
  names.group_by = "aggregate";
  auto answer = ledger::ReadTokens(store, &reads, request, names);
  if (!answer) return ParameterError(answer.error(), {"window", "aggregate", "policy", "idle"});
  return {200, "application/json",
          report::TokenReportToJson(answer->report, answer->scope.currency)};
}

ApiResponse Findings(store::LedgerStore& store, ledger::ReadService& reads, const Params& p,
                     const guardrails::Policy& policy) {
  if (auto u = UnknownParam(p, {"window", "kind", "namespace", "workload", "severity", "state"});
      !u.empty())
    return JsonError(400, fmt::format("unknown parameter '{}' (window, kind, namespace, workload, "
                                      "severity, state)",
                                      u));
  ledger::FindingsQuery q;
  q.window = ParamOr(p, "window", "7d");
  q.namespace_name = ParamOr(p, "namespace", "");
  q.workload = ParamOr(p, "workload", "");
  auto kind = ledger::ParseKindFilter(ParamOr(p, "kind", ""));
  if (!kind) return ParameterError(kind.error(), {"kind"});
  q.kind = *kind;
  auto severity = ledger::ParseSeverityFilter(ParamOr(p, "severity", ""));
  if (!severity) return ParameterError(severity.error(), {"severity"});
  q.min_severity = *severity;
  const std::string state = ParamOr(p, "state", "all");
  if (state != "all" && state != "open")
    return JsonError(400,
                     fmt::format("parameter 'state': state '{}': expected open or all", state));
  q.open_only = state == "open";
  auto doc = ledger::ReadFindingsDocument(store, reads, q, policy);
  if (!doc) return ParameterError(doc.error(), {"window", "namespace"});
  json out = ledger::FindingsObject(*doc);
  if (auto extent = store.Extent()) AddLedgerReach(out, {doc->from_us, doc->to_us}, *extent);
  out["code"] = 200;
  out["status"] = "success";
  return {200, "application/json", JsonText(out) + "\n"};
}

ApiResponse Devices(store::LedgerStore& store, ledger::ReadService& reads, const Params& p) {
  if (auto u = UnknownParam(p, {"window", "policy"}); !u.empty())
    return JsonError(400, fmt::format("unknown parameter '{}' (window, policy)", u));
  auto extent = store.Extent();
  if (!extent) return FromError(extent.error());
  auto window = report::ResolveWindow(ParamOr(p, "window", "all"), *extent);
  if (!window) return JsonError(400, "parameter 'window': " + window.error().message);
  // A device's cost does not depend on the policy, but an unknown one is a mistake to say.
  if (auto policy = cost::ParsePolicy(ParamOr(p, "policy", "allocation")); !policy)
    return JsonError(400, "parameter 'policy': " + policy.error().message);
  auto devices = reads.Devices(store, *window);
  if (!devices) return FromError(devices.error());
  // Written without a tree, keys in byte order (json_writer.h): 10,000 GPUs are 4 MB.
  JsonWriter w;
  w.BeginObject();
  w.Int("code", 200);
  w.Key("data");
  w.BeginArray();
  for (const ledger::DeviceSummary& a : *devices) {
    w.BeginObject();
    w.Int("busy_us", a.busy_us);
    w.Int("cost_nanos", a.cost_nanos);
    w.Int("energy_mj", a.energy_mj);
    w.String("gpu_model", a.placement.gpu_model);
    w.String("gpu_uuid", a.placement.gpu.value);
    w.Int("idle_us", a.idle_us);
    w.Key("layouts");
    w.BeginArray();
    for (const std::string& layout : a.layouts) w.String(layout);
    w.EndArray();
    w.Int("memory_total_bytes", a.memory_total_bytes);
    w.Int("metered_us", a.metered_us);
    w.String("node", a.placement.node);
    w.String("pricing_class", a.placement.pricing_class);
    w.String("sharing_mode", ToString(a.placement.sharing));
    w.Int("unallocated_us", a.unallocated_us);
    w.Int("unattributed_us", a.unattributed_us);
    w.Int("unmetered_us", a.unmetered_us);
    w.Double("utilization", a.metered_us > 0 ? static_cast<double>(a.busy_us) / a.metered_us : 0.0);
    w.EndObject();
  }
  w.EndArray();
  report::WriteLedgerReach(w, *window, *extent);
  w.String("status", "success");
  w.Key("window");
  w.BeginObject();
  w.String("end", FormatRfc3339(window->to_us));
  w.String("start", FormatRfc3339(window->from_us));
  w.EndObject();
  w.EndObject();
  return {200, "application/json", std::move(w).Take() + "\n"};
}

// The API's endpoints; CanonicalPath maps the others' names of them.
constexpr std::string_view kEndpoints[] = {
    "/api/v1/allocation",      "/api/v1/report",       "/api/v1/devices",    "/api/v1/findings",
    "/api/v1/recommendations", "/api/v1/export/focus", "/api/v1/statements", "/api/v1/sources",
    "/api/v1/tokens"};

// OpenCost's and Kubecost's paths its clients (`kubectl cost`, dashboards) read, answered as
// theirs: the allocation API's three names, and the configuration (the currency).
constexpr std::string_view kOpenCostPaths[] = {"/allocation", "/allocation/compute",
                                               "/model/allocation", "/model/getConfigs"};

bool IsOpenCostPath(std::string_view path) {
  return std::find(std::begin(kOpenCostPaths), std::end(kOpenCostPaths), path) !=
         std::end(kOpenCostPaths);
}

std::string_view CanonicalPath(std::string_view path) {
  if (IsOpenCostPath(path) && path != "/model/getConfigs") return "/api/v1/allocation";
  return path;
}

// The endpoints that read their window's rows for themselves, each of which may hold hundreds of
// MB: they run one at a time (Api::Heavy).
bool IsHeavy(std::string_view path) {
  return path == "/api/v1/findings" || path == "/api/v1/recommendations" ||
         path == "/api/v1/export/focus";
}

// Returns what a read for one query alone freed (days of rows read and let go) to the system:
// glibc keeps it otherwise, and a server's size would be its largest such read (at 10,000 GPUs
// ~200 MB for a week of rows) on top of what it keeps.
void GiveBackFreedMemory() { malloc_trim(0); }

}  // namespace

Api::Api(StoreOpener open, ApiToken token, guardrails::Policy policy, cost::Catalog catalog,
         const Clock* clock, ledger::ReadServiceOptions reads, Micros heavy_wait_us)
    : open_(open),
      pool_(std::move(open)),
      heavy_wait_us_(heavy_wait_us),
      reads_(reads),
      token_(std::move(token)),
      policy_(std::move(policy)),
      catalog_(std::move(catalog)),
      clock_(clock != nullptr ? *clock : TheSystemClock()),
      hour_cost_([this](Micros now_us) -> Result<std::string> {
        auto store = pool_.Borrow();
        if (!store) return store.error();
        return RenderHourCost(**store, now_us);
      }) {}

void Api::SetSources(std::function<ingest::SourcesHealth()> sources) {
  std::lock_guard lock(mu_);
  sources_ = std::move(sources);
}

ApiResponse Api::Sources(const Params& p) {
  if (auto u = UnknownParam(p, {}); !u.empty())
    return JsonError(400, fmt::format("unknown parameter '{}' (none)", u));
  std::function<ingest::SourcesHealth()> read;
  {
    std::lock_guard lock(mu_);
    read = sources_;
  }
  json data = {{"ingesting", static_cast<bool>(read)}, {"targets", json::array()}};
  if (read) {
    const ingest::SourcesHealth h = read();
    data["source"] = h.source;
    if (!h.discovery_error.empty()) data["discovery_error"] = h.discovery_error;
    int down = 0;
    for (const ingest::TargetHealth& t : h.targets) {
      json target = {{"target", t.target}, {"up", t.up}, {"failures", t.failures}};
      if (!t.up) {
        ++down;
        if (!t.last_error.empty()) target["last_error"] = t.last_error;
      }
      if (t.last_success_us > 0) target["last_success"] = FormatRfc3339(t.last_success_us);
      data["targets"].push_back(std::move(target));
    }
    data["down"] = down;
  }
  return {200, "application/json",
          JsonText(json{{"code", 200}, {"status", "success"}, {"data", std::move(data)}}) + "\n"};
}

void Api::AddMetrics(std::function<std::string()> render) {
  std::lock_guard lock(mu_);
  extra_metrics_.push_back(std::move(render));
}

Status Api::WarmUp() {
  auto store = pool_.Borrow();
  if (!store) return store.status();
  auto extent = (*store)->Extent();
  if (!extent) return extent.status();
  if (extent->to_us <= extent->from_us) return Status::Ok();  // nothing to read yet
  // The days kept summed of the default report (policy and idle handling) first, held: the
  // first reports over them regroup them rather than read them, even while the snapshot loads.
  auto defaults = ledger::ParseReportRequest({}, *extent);
  if (!defaults) return defaults.status();
  Status warmed = reads_.Warm(**store, &*defaults);
  if (warmed.ok()) {
    // Then what findings keep of each day of a month, held: /api/v1/findings over it reads
    // only its open days.
    ledger::FindingsQuery month;
    month.window = "30d";
    if (auto held = ledger::ReadFindingsDocument(**store, reads_, month, policy_); !held)
      warmed = held.status();
  }
  GiveBackFreedMemory();  // the days of rows read to hold the GPUs' and findings' days
  return warmed;
}

ApiResponse Api::Handle(const std::string& path, const Params& params,
                        const std::string& authorization) {
  return Answered(path, [&] { return Route(path, params, token_.Check(authorization)); });
}

ApiResponse Api::HandleOpenCost(const std::string& path, const Params& params) {
  return Answered(path, [&] {
    if (path == "/model/assets" || path == "/assets")  // `kubectl cost node`
      return JsonError(404,
                       "a GPU ledger does not price nodes' assets (CPU, RAM, disks): "
                       "aggregate=node on /allocation gives each node's GPU cost, as does "
                       "`gpuledger report --by node`");
    if (path != "/healthz" && !IsOpenCostPath(path))
      return JsonError(404, fmt::format("no endpoint {} on the OpenCost listener: it serves "
                                        "OpenCost's read paths alone ({}, /healthz); the API, "
                                        "the web UI and /metrics are on the main listener",
                                        path, fmt::join(kOpenCostPaths, ", ")));
    return Route(path, params, ApiToken::Verdict::kAllowed);
  });
}

ApiResponse Api::Answered(const std::string& path, const std::function<ApiResponse()>& answer) {
  const std::int64_t direct_reads = reads_.stats().direct_reads;
  ApiResponse r = answer();
  // Heavy requests gave back what they freed before letting the next one in (Heavy).
  if (reads_.stats().direct_reads != direct_reads && !IsHeavy(CanonicalPath(path)))
    GiveBackFreedMemory();
  // Paths the API does not serve share one label value, whatever they were answered (a 404,
  // or a 401 before the path is looked at): a scanner must not grow the series without bound.
  const bool known =
      path == "/healthz" || path == "/readyz" || path == "/metrics" || IsOpenCostPath(path) ||
      std::find(std::begin(kEndpoints), std::end(kEndpoints), path) != std::end(kEndpoints);
  std::lock_guard lock(mu_);
  ++requests_[{known ? path : "other", r.status}];
  return r;
}

ApiResponse Api::Route(const std::string& requested, const Params& params,
                       ApiToken::Verdict token) {
  const std::string path(CanonicalPath(requested));
  if (path == "/healthz") return {200, "text/plain", "ok\n"};
  if (path == "/readyz") return Ready();
  if (path == "/metrics") return Metrics(token == ApiToken::Verdict::kAllowed);
  if (!path.starts_with("/api/") && path != "/model/getConfigs")
    return JsonError(404, fmt::format("no endpoint {}", path));
  if (token == ApiToken::Verdict::kPending) return JsonError(503, token_.Pending());
  if (token == ApiToken::Verdict::kRefused)
    return JsonError(401, "missing or wrong bearer token (Authorization: Bearer <token>)");
  // OpenCost's configuration as its clients read it: the currency figures are in.
  if (path == "/model/getConfigs")
    return {200, "application/json",
            JsonText(json{{"code", 200},
                          {"status", "success"},
                          {"data", {{"currencyCode", catalog_.currency}}}}) +
                "\n"};
  if (std::find(std::begin(kEndpoints), std::end(kEndpoints), path) == std::end(kEndpoints))
    return JsonError(404, fmt::format("no endpoint {}", path));
  // The sources' health needs no ledger: it says why a ledger falls behind.
  if (path == "/api/v1/sources") return Sources(params);
  auto store = pool_.Borrow();
  if (!store) return JsonError(503, "ledger unavailable: " + store.error().message);
  auto answer = [&] {
    if (path == "/api/v1/allocation")
      return Allocation(**store, reads_, params, /*opencost_names=*/path != requested);
    if (path == "/api/v1/report") return Report(**store, reads_, params);
    if (path == "/api/v1/devices") return Devices(**store, reads_, params);
    if (path == "/api/v1/findings") return Findings(**store, reads_, params, policy_);
    if (path == "/api/v1/recommendations")
      return Recommendations(**store, reads_, params, catalog_, open_);
    if (path == "/api/v1/statements") return Statements(**store, params);
    if (path == "/api/v1/tokens") return Tokens(**store, reads_, params);
    return ExportFocus(std::move(*store), reads_, params);
  };
  return IsHeavy(path) ? Heavy(answer) : answer();
}

ApiResponse Api::Heavy(const std::function<ApiResponse()>& answer) {
  std::unique_lock slot(heavy_, std::defer_lock);
  if (!slot.try_lock_for(std::chrono::microseconds(heavy_wait_us_))) {
    const Micros seconds = std::max<Micros>(1, heavy_wait_us_ / kMicrosPerSecond);
    ApiResponse busy = JsonError(
        503, fmt::format("another recommendations, findings or export request has run for the "
                         "{} s this one waited: ask again soon",
                         seconds));
    busy.headers.emplace_back("Retry-After", std::to_string(seconds));
    return busy;
  }
  ApiResponse r = answer();
  if (r.stream) {
    // Streamed: the slot is held until the body is sent (on this thread, after this returns),
    // or until the answer goes unsent (a HEAD).
    auto held = std::make_shared<std::unique_lock<std::timed_mutex>>(std::move(slot));
    r.stream = [this, held, stream = std::move(r.stream)](const http::SendPart& send) {
      const bool whole = stream(send);
      GiveBackFreedMemory();
      if (held->owns_lock()) held->unlock();
      return whole;
    };
    return r;
  }
  GiveBackFreedMemory();  // its rows, before the next one reads its own
  return r;
}

ApiResponse Api::Ready() {
  auto store = pool_.Borrow();
  Result<TimeRange> extent = store ? (*store)->Extent() : Result<TimeRange>(store.error());
  if (!extent) return {503, "text/plain", "ledger unreadable: " + extent.error().message + "\n"};
  return {200, "text/plain", "ready\n"};
}

ApiResponse Api::Metrics(bool costs) {
  std::map<std::pair<std::string, int>, std::int64_t> requests;
  std::vector<std::function<std::string()>> extra;
  {
    std::lock_guard lock(mu_);
    requests = requests_;
    extra = extra_metrics_;
  }
  using prometheus::kServerLedgerEndTimestampSeconds;
  using prometheus::kServerLedgerUp;
  using prometheus::kServerReportSnapshotsTotal;
  using prometheus::kServerRequestsTotal;
  prometheus::ExpositionWriter w;
  w.Family(kServerRequestsTotal);
  for (const auto& [key, n] : requests) {
    const std::string code = std::to_string(key.second);
    w.Sample(kServerRequestsTotal.name, {{"path", key.first}, {"code", code}},
             static_cast<double>(n));
  }
  auto store = pool_.Borrow();
  Result<TimeRange> extent = store ? (*store)->Extent() : Result<TimeRange>(store.error());
  w.Family(kServerLedgerUp);
  w.Sample(kServerLedgerUp.name, extent.ok() ? 1 : 0);
  if (extent.ok() && extent->to_us > 0) {
    w.Family(kServerLedgerEndTimestampSeconds);
    w.Sample(kServerLedgerEndTimestampSeconds.name,
             static_cast<double>(extent->to_us / kMicrosPerSecond));
  }
  const ledger::ReadServiceStats reads = reads_.stats();
  w.Family(kServerReportSnapshotsTotal);
  for (const auto& [result, count] : {std::pair{"hit", reads.cache_hits},
                                      {"load", reads.cache_loads},
                                      {"refresh", reads.cache_refreshes},
                                      {"direct", reads.direct_reads},
                                      {"kept_days", reads.kept_day_reads},
                                      {"held_days", reads.held_day_reads}})
    w.Sample(kServerReportSnapshotsTotal.name, {{"result", result}}, static_cast<double>(count));
  std::string out = w.Take();
  if (costs) out += hour_cost_.Render(clock_.Now().wall_us);  // read in the background
  for (const auto& render : extra) out += render();
  return {200, "text/plain; version=0.0.4; charset=utf-8", out};
}

}  // namespace gpuledger::server
