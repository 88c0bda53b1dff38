#include "recommendations/replay.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/money.h"

namespace gpuledger::recommendations {
namespace {

using rightsizing::Recommendation;

// `hourly` over `hours`, held to int64 (a window whose month fits does over any real window).
Nanos Over(Nanos hourly, std::int64_t hours) {
  return static_cast<Nanos>(
      std::clamp<__int128>(static_cast<__int128>(hourly) * hours, INT64_MIN, INT64_MAX));
}

std::string Hours(std::int64_t n) { return fmt::format("{} hour{}", n, n == 1 ? "" : "s"); }

// What the replay found, in words.
std::string Finding(const rightsizing::Replayed& r, rightsizing::Percentile p) {
  std::string causes;
  auto cause = [&](std::int64_t n, std::string_view what) {
    if (n == 0) return;
    causes += fmt::format("{}{} {}", causes.empty() ? "" : ", ", Hours(n), what);
  };
  cause(r.memory_hours, "with a memory peak above what it would hold");
  cause(r.compute_hours, "with compute above what it would do");
  cause(r.gpus_hours, "with more GPUs busy than it would have");
  const std::string saving =
      fmt::format("those hours would have cost {} instead of {}", DisplayMoney(r.cost_after_nanos),
                  DisplayMoney(r.cost_before_nanos));
  if (r.misfit_hours == 0)
    return fmt::format("Replayed against its own {} in the window: it fits every one; {}.",
                       Hours(r.hours), saving);
  return fmt::format(
      "Replayed against its own {} in the window: it would not have fit {} ({}), {} the {} "
      "allowed at {}; {}.",
      Hours(r.hours), Hours(r.misfit_hours), causes, r.risky() ? "more than" : "within",
      Hours(r.allowed_hours), rightsizing::PercentileName(p), saving);
}

}  // namespace

rightsizing::Replayed Replay(const Recommendation& rec, const DemandSeries& demand,
                             rightsizing::Percentile percentile) {
  rightsizing::Replayed out;
  const rightsizing::Layout layout = rec.layout.value_or(rightsizing::Layout{});
  const auto gpus = static_cast<std::size_t>(std::max<std::int64_t>(0, layout.gpus));
  const auto compute = static_cast<float>(layout.compute);
  for (std::size_t h = 0; h < demand.hours.size(); ++h) {
    const auto [begin, end] = demand.Gpus(h);
    const auto held = static_cast<std::int64_t>(end - begin);
    std::int64_t busy = 0;
    bool memory = false, over = false;
    // Its GPUs are busiest first: the layout's GPUs take the first ones.
    for (std::size_t i = begin; i < end; ++i) {
      const float share = demand.compute[i];
      if (BusyShare(share)) ++busy;
      if (i - begin >= gpus) continue;
      memory |= layout.memory_bytes > 0 && Bytes{demand.memory_mib[i]} * kMiB > layout.memory_bytes;
      over |= share > compute;
    }
    if (held == 0) continue;
    ++out.hours;
    const bool too_many = busy > layout.gpus;
    out.memory_hours += memory;
    out.compute_hours += over;
    out.gpus_hours += too_many;
    out.misfit_hours += memory || over || too_many;
  }
  out.allowed_hours = out.hours * (100 - rightsizing::PercentOf(percentile)) / 100;
  out.cost_before_nanos = Over(rec.current_hourly_nanos, out.hours);
  out.cost_after_nanos = Over(rec.recommended_hourly_nanos, out.hours);
  return out;
}

void ReplayRanked(std::vector<Recommendation>& ranked, const rightsizing::WorkloadUsage& usage,
                  const DemandSeries& demand, const rightsizing::RightsizingOptions& options) {
  const rightsizing::Percentile percentile = options.compute_percentile;
  bool any = false;
  for (Recommendation& r : ranked) {
    if (!r.layout) continue;
    any = true;
    r.replay = Replay(r, demand, percentile);
    r.reasons.insert(r.reasons.begin() + 1, Finding(*r.replay, percentile));
    if (r.replay->risky()) {
      r.confidence = "low";
      r.reasons.push_back(fmt::format(
          "Confidence is low: the replay found it would not have fit in more of the window's "
          "hours than {} allows.",
          rightsizing::PercentileName(percentile)));
    }
  }
  if (!any) return;
  std::stable_partition(ranked.begin(), ranked.end(),
                        [](const Recommendation& r) { return !r.replay || !r.replay->risky(); });
  if (!ranked.front().replay || !ranked.front().replay->risky()) return;
  // Every move is risky: keep, and say why.
  const Recommendation& first = ranked.front();
  Recommendation keep;
  keep.workload = first.workload;
  keep.action = rightsizing::Action::kKeep;
  keep.gpu_model = usage.gpu_model;
  keep.recommended_ppd = usage.gpus_held_ppd;
  keep.current_hourly_nanos = first.current_hourly_nanos;
  keep.recommended_hourly_nanos = first.current_hourly_nanos;
  keep.days_observed = first.days_observed;
  keep.coverage = first.coverage;
  keep.confidence = rightsizing::Confidence(first.days_observed, first.coverage, options);
  keep.reasons = {
      fmt::format("Keep it as it is: every move that would save money was replayed against the "
                  "window's own hours and would not have fit in more of them than {} allows "
                  "(the alternatives say how many).",
                  rightsizing::PercentileName(percentile))};
  ranked.insert(ranked.begin(), std::move(keep));
}

}  // namespace gpuledger::recommendations
