#include "ledger/rightsize.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "ledger/reports.h"
#include "model/reconciliation.h"
#include "recommendations/rightsize_days.h"
#include "report/window.h"

namespace gpuledger::ledger {
namespace {

Result<double> ParseHeadroom(const std::string& text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v) || v < 1.0 ||
      v > 4.0)
    return InvalidArgument(fmt::format(
        "headroom: expected a factor from 1.0 to 4.0 above the memory peak (1.2 = 20% room), "
        "got '{}'",
        text));
  return v;
}

Result<rightsizing::Percentile> ParsePercentile(const std::string& text) {
  if (auto p = rightsizing::ParsePercentile(text)) return *p;
  return InvalidArgument(fmt::format("percentile: expected p50, p95 or p99, got '{}'", text));
}

// Where [from, to) splits so that each side reads about half its rows: the day boundary that
// halves the hours read from rows, a kept day counting as one (decoding it takes about as long
// as an hour of rows); `to` when there is no boundary inside.
Micros HalfTheRows(const TimeRange& window, const std::vector<Micros>& kept_days) {
  std::vector<std::pair<Micros, Micros>> parts;  // start, weight
  Micros total = 0;
  for (Micros from = window.from_us; from < window.to_us;) {
    const Micros to = std::min(window.to_us, DayStart(from) + kMicrosPerDay);
    const bool kept =
        to - from == kMicrosPerDay && std::binary_search(kept_days.begin(), kept_days.end(), from);
    parts.emplace_back(from, kept ? 1 : (to - from + kMicrosPerHour - 1) / kMicrosPerHour);
    total += parts.back().second;
    from = to;
  }
  Micros before = 0;
  for (std::size_t i = 1; i < parts.size(); ++i) {
    before += parts[i - 1].second;
    if (2 * before >= total) return parts[i].first;
  }
  return window.to_us;
}

// Every workload's figures over `window`, the ledger read a day at a time (rightsize_days.h);
// with `open_more`, the days after HalfTheRows at once on a connection of its own (a thread
// each: the store's decoding is most of the time of the days read from rows), appended.
Result<std::vector<recommendations::GatheredWorkload>> Gather(
    store::LedgerStore& store, const TimeRange& window,
    const recommendations::SummaryOptions& options, const store::StoreOpener& open_more) {
  Micros split = window.to_us;
  std::unique_ptr<store::LedgerStore> other;
  if (open_more && window.to_us - window.from_us > kMicrosPerHour) {
    auto kept = store.KeptDays(recommendations::RightsizeDayKind(), window);
    if (!kept) return kept.error();
    split = HalfTheRows(window, *kept);
    if (split < window.to_us)
      if (auto opened = open_more()) other = std::move(*opened);
    if (other == nullptr) split = window.to_us;
  }
  recommendations::WorkloadHours hours, later;
  Status later_read = Status::Ok();
  std::thread reader;
  if (other != nullptr)
    reader = std::thread([&] {
      later_read = recommendations::GatherDays(*other, {split, window.to_us}, options, later);
    });
  const Status read = recommendations::GatherDays(store, {window.from_us, split}, options, hours);
  if (reader.joinable()) reader.join();
  if (!read.ok()) return read.error();
  if (!later_read.ok()) return later_read.error();
  hours.Append(std::move(later));
  return hours.Finish(options.compute_percentile);
}

}  // namespace

Result<recommendations::RightsizeAnswer> ReadRightsizePlan(
    store::LedgerStore& store, ledger::ReadService* reads,
    const recommendations::RightsizeQuery& query, const cost::Catalog& catalog,
    const store::StoreOpener& open_more) {
  auto headroom = ParseHeadroom(query.headroom);
  if (!headroom) return headroom.error();
  auto percentile = ParsePercentile(query.percentile);
  if (!percentile) return percentile.error();
  auto extent = store.Extent();
  if (!extent) return extent.error();
  auto window = report::ResolveWindow(query.window, *extent);
  if (!window) return window.error();

  recommendations::RightsizeOptions options;
  options.summary.from_us = window->from_us;
  options.summary.to_us = window->to_us;
  options.summary.namespace_name = query.namespace_name;
  options.summary.compute_percentile = *percentile;
  options.summary.models_by_class = recommendations::ModelsByClass(catalog);
  options.recommend.memory_headroom = *headroom;
  options.recommend.compute_percentile = *percentile;
  options.workload = query.workload;

  // What the ledger charged each workload and its utilization class: the report by controller,
  // under the allocation policy, as `report --by controller` answers it.
  ledger::ReportQuery by_controller;
  by_controller.window = *window;
  by_controller.group_by = {{report::Dimension::Kind::kController, ""}};
  by_controller.max_sum_bytes = ledger::kServerSumBytes;
  ledger::ReadService one_query(ledger::OneQueryOptions(open_more));
  auto reports = (reads != nullptr ? *reads : one_query).Reports(store, by_controller);
  if (!reports) return reports.error();
  auto gathered = Gather(store, *window, options.summary, open_more);
  if (!gathered) return gathered.error();
  auto plan = recommendations::PlanRightsizing(
      recommendations::Summarize(std::move(*gathered), reports->front(), options.summary), options);
  if (!plan) return plan.error();
  return recommendations::RightsizeAnswer{std::move(*plan), *window, *headroom, query.percentile};
}

}  // namespace gpuledger::ledger
