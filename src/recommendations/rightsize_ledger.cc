#include "recommendations/rightsize_ledger.h"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "billing/ledger_reads.h"
#include "report/window.h"

namespace gpuledger::recommendations {
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
  if (text == "p50") return rightsizing::Percentile::kP50;
  if (text == "p95") return rightsizing::Percentile::kP95;
  if (text == "p99") return rightsizing::Percentile::kP99;
  return InvalidArgument(fmt::format("percentile: expected p50, p95 or p99, got '{}'", text));
}

}  // namespace

Result<RightsizeAnswer> ReadRightsizePlan(store::LedgerStore& store, const RightsizeQuery& query,
                                          const cost::Catalog& catalog) {
  auto headroom = ParseHeadroom(query.headroom);
  if (!headroom) return headroom.error();
  auto percentile = ParsePercentile(query.percentile);
  if (!percentile) return percentile.error();
  auto extent = store.Extent();
  if (!extent) return extent.error();
  auto window = report::ResolveWindow(query.window, *extent);
  if (!window) return window.error();
  // The rows first: past the limit nothing else is read.
  auto usage = billing::ReadUsageAtMost(store, *window, query.max_usage_rows);
  if (!usage) return usage.error();
  auto devices = billing::ReadPricedDeviceHours(store, *window);
  if (!devices) return devices.error();

  RightsizeOptions options;
  options.summary.from_us = window->from_us;
  options.summary.to_us = window->to_us;
  options.summary.namespace_name = query.namespace_name;
  options.summary.compute_percentile = *percentile;
  options.summary.models_by_class = ModelsByClass(catalog);
  options.recommend.memory_headroom = *headroom;
  options.recommend.compute_percentile = *percentile;
  options.workload = query.workload;
  auto plan = PlanRightsizing(*devices, *usage, options);
  if (!plan) return plan.error();
  return RightsizeAnswer{std::move(*plan), *window, *headroom, query.percentile};
}

}  // namespace gpuledger::recommendations
