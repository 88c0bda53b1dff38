#include "server/hour_cost.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "ledger/read_reports.h"
#include "ledger/reports.h"
#include "ledger/tokens.h"
#include "common/time_util.h"
#include "prometheus/metric_table.h"
#include "store/ledger_identity.h"

namespace gpuledger::server {
namespace {

double Units(Nanos nanos) { return static_cast<double>(nanos) / 1e9; }

// The hour's tokens by namespace and model and what a million of them cost, into `w`: the
// families always, a sample for each (namespace, model) whose engines served tokens in it.
Status WriteHourTokens(store::LedgerStore& store, const TimeRange& hour,
                       const std::string& currency, prometheus::ExpositionWriter& w) {
  ledger::TokenRequest request;
  request.window = FormatRfc3339(hour.from_us) + "," + FormatRfc3339(hour.to_us);
  request.group_by = "namespace,model";
  auto answer = ledger::ReadTokens(store, nullptr, request);
  if (!answer) return answer.status();
  using namespace prometheus;
  // Each group's (namespace, model): a namespace has no '/', a model may.
  std::vector<std::pair<std::string, std::string>> names;
  for (const report::TokenGroup& g : answer->report.groups) {
    const std::size_t slash = g.key.find('/');
    names.emplace_back(g.key.substr(0, slash), g.key.substr(slash + 1));
  }
  w.Family(kServerHourTokens);
  for (std::size_t i = 0; i < names.size(); ++i) {
    const report::TokenGroup& g = answer->report.groups[i];
    const auto& [ns, model] = names[i];
    w.Sample(kServerHourTokens.name, {{"namespace", ns}, {"model", model}, {"kind", "input"}},
             static_cast<double>(g.input_tokens));
    w.Sample(kServerHourTokens.name, {{"namespace", ns}, {"model", model}, {"kind", "output"}},
             static_cast<double>(g.output_tokens));
  }
  w.Family(kServerHourTokenCostPerMillion);
  for (std::size_t i = 0; i < names.size(); ++i) {
    const report::TokenGroup& g = answer->report.groups[i];
    const auto& [ns, model] = names[i];
    const std::pair<const char*, std::optional<Nanos>> kinds[] = {
        {"input", report::NanosPerMillion(g.input_cost_nanos, g.input_tokens)},
        {"output", report::NanosPerMillion(g.output_cost_nanos, g.output_tokens)},
        {"blended", report::NanosPerMillion(g.gpu.cost_nanos, g.tokens())}};
    for (const auto& [kind, nanos] : kinds)
      if (nanos)
        w.Sample(kServerHourTokenCostPerMillion.name,
                 {{"namespace", ns}, {"model", model}, {"kind", kind}, {"currency", currency}},
                 Units(*nanos));
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> RenderHourCost(store::LedgerStore& store, Micros now_us) {
  auto extent = store.Extent();
  if (!extent) return extent.error();
  const Micros hour_end = std::min(now_us - now_us % kMicrosPerHour, extent->to_us);
  std::string out;
  if (hour_end - kMicrosPerHour >= extent->from_us && extent->to_us > extent->from_us) {
    ledger::ReportQuery query;
    query.window = {hour_end - kMicrosPerHour, hour_end};
    auto by = report::ParseGroupBy("namespace");
    if (!by) return by.error();
    query.group_by = *by;
    query.policy = cost::Policy{};
    query.idle = cost::IdleHandling{};
    auto reports = ledger::ReadReports(store, query);
    if (!reports) return reports.error();
    auto identity = store::ReadLedgerIdentity(store);
    if (!identity) return identity.error();
    const std::string& currency = identity->currency;
    const report::Report& r = reports->front();
    using namespace prometheus;
    ExpositionWriter w;
    w.Family(kServerHourStartTimestampSeconds);
    w.Sample(kServerHourStartTimestampSeconds.name,
             static_cast<double>(query.window.from_us / kMicrosPerSecond));
    w.Family(kServerHourCost);
    for (const report::Row& row : r.rows)
      w.Sample(kServerHourCost.name, {{"namespace", row.key}, {"currency", currency}},
               Units(row.figures.cost_nanos));
    w.Family(kServerHourIdleCost);
    w.Sample(kServerHourIdleCost.name, {{"currency", currency}}, Units(r.idle.cost_nanos));
    w.Family(kServerHourDeviceCost);
    w.Sample(kServerHourDeviceCost.name, {{"currency", currency}},
             Units(r.total.device_cost_nanos));
    if (Status s = WriteHourTokens(store, query.window, currency, w); !s.ok()) return s.error();
    out = w.Take();
  }
  return out;
}

HourCost::~HourCost() {
  if (reader_.joinable()) reader_.join();
}

std::string HourCost::Render(Micros now_us) {
  std::lock_guard lock(mu_);
  const bool stale = started_at_us_ < 0 || now_us - started_at_us_ >= kRefreshUs ||
                     now_us < started_at_us_;  // the wall clock stepped back
  if (stale && !reading_) {
    if (reader_.joinable()) reader_.join();  // done: reading_ is false
    reading_ = true;
    started_at_us_ = now_us;
    reader_ = std::thread([this, now_us] {
      Result<std::string> text = read_(now_us);
      std::lock_guard done(mu_);
      rendered_ = text ? std::move(*text) : std::string();
      reading_ = false;
    });
  }
  return rendered_;
}

}  // namespace gpuledger::server
