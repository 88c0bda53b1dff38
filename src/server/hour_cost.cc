#include "server/hour_cost.h"

#include <algorithm>

#include "ledger/read_reports.h"
#include "ledger/reports.h"
#include "prometheus/metric_table.h"
#include "store/ledger_identity.h"

namespace gpuledger::server {
namespace {

double Units(Nanos nanos) { return static_cast<double>(nanos) / 1e9; }

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
