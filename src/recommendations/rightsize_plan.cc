#include "recommendations/rightsize_plan.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "common/money.h"
#include "cost/gpu_memory.h"
#include "recommendations/consolidation_replay.h"
#include "recommendations/replay.h"

namespace gpuledger::recommendations {
namespace {

// Exact money sums: a total past int64 is an error, never a wrapped figure.
class SavingSum {
 public:
  void Add(Nanos n) { sum_ += n; }
  Result<Nanos> Value(std::string_view what) const {
    if (sum_ > INT64_MAX || sum_ < INT64_MIN)
      return InvalidArgument(fmt::format("the {} does not fit in 64 bits", what));
    return static_cast<Nanos>(sum_);
  }

 private:
  __int128 sum_ = 0;
};

Nanos BestSaving(const WorkloadAdvice& a) {
  return a.ranked.empty() ? 0 : a.ranked.front().monthly_saving_nanos;
}

// The hours of the window's rows: from the first hour any workload held a GPU to the last.
TimeRange HoursOfRows(const std::vector<WorkloadAdvice>& advice) {
  TimeRange span{INT64_MAX, INT64_MIN};
  for (const WorkloadAdvice& a : advice)
    if (!a.summary.demand.hours.empty()) {
      span.from_us = std::min(span.from_us, a.summary.demand.hours.front());
      span.to_us = std::max(span.to_us, a.summary.demand.hours.back() + kMicrosPerHour);
    }
  return span.from_us < span.to_us ? span : TimeRange{0, 0};
}

// The plan of `input`'s workloads (`plan_for`: packed and replayed). One workload too large to
// share can make a group's packing free nothing where the others alone would free a GPU: while
// leaving one where it is frees more, it is left (the largest gain first), named in
// `left_alone`. Groups of up to `max_items` only, as each try is a packing and a replay.
rightsizing::ConsolidationPlan PlanLeavingOutWhatFreesLess(
    rightsizing::ConsolidationInput input,
    const std::function<rightsizing::ConsolidationPlan(const rightsizing::ConsolidationInput&)>&
        plan_for,
    int max_items) {
  rightsizing::ConsolidationPlan plan = plan_for(input);
  std::vector<std::string> left_where_they_are;
  while (input.workloads.size() > 2 && static_cast<int>(input.workloads.size()) <= max_items) {
    std::optional<std::pair<std::size_t, rightsizing::ConsolidationPlan>> better;
    for (std::size_t i = 0; i < input.workloads.size(); ++i) {
      rightsizing::ConsolidationInput fewer = input;
      fewer.workloads.erase(fewer.workloads.begin() + static_cast<std::ptrdiff_t>(i));
      rightsizing::ConsolidationPlan p = plan_for(fewer);
      const Nanos beat = better ? better->second.monthly_saving_nanos : plan.monthly_saving_nanos;
      if (p.monthly_saving_nanos > beat) better.emplace(i, std::move(p));
    }
    if (!better) break;
    left_where_they_are.push_back(
        fmt::format("{}: packed with the others it frees less ({} a month without it)",
                    input.workloads[better->first].workload,
                    DisplayMoney(better->second.monthly_saving_nanos)));
    input.workloads.erase(input.workloads.begin() + static_cast<std::ptrdiff_t>(better->first));
    plan = std::move(better->second);
  }
  plan.left_alone.insert(plan.left_alone.end(), left_where_they_are.begin(),
                         left_where_they_are.end());
  return plan;
}

// One plan per (GPU model, pool) with two or more workloads on it, replayed over the hours of
// the window's rows (consolidation_replay.h). Workloads whose own advice is to release their
// GPUs are not moved (they give them back), nor those that keep more than one GPU busy at
// once (a plan gives each workload one GPU).
std::vector<rightsizing::ConsolidationPlan> Consolidate(const std::vector<WorkloadAdvice>& advice,
                                                        const RightsizeOptions& o) {
  struct Group {
    rightsizing::ConsolidationInput input;
    std::map<std::string, const WorkloadSummary*> members;
    std::vector<std::string> left_alone;
  };
  std::map<std::pair<std::string, std::string>, Group> groups;
  for (const WorkloadAdvice& a : advice) {
    const rightsizing::WorkloadUsage& u = a.summary.usage;
    if (u.gpus_held_ppd <= 0 || u.gpu_memory_bytes <= 0 || u.hourly_price_nanos <= 0) continue;
    Group& g = groups[{u.gpu_model, u.pool}];
    if (!a.ranked.empty() && a.ranked.front().action == rightsizing::Action::kRelease) {
      g.left_alone.push_back(u.workload + ": its own advice is to release its GPUs");
      continue;
    }
    if (u.gpus_used > 1) {
      g.left_alone.push_back(
          fmt::format("{}: keeps {:.2f} GPUs busy at once", u.workload, u.gpus_used));
      continue;
    }
    rightsizing::ConsolidationInput& in = g.input;
    in.gpu_model = u.gpu_model;
    in.pool = u.pool;
    in.gpu_memory_bytes = u.gpu_memory_bytes;
    // The cheapest price any of them pays: the saving claimed is never more than is paid.
    in.hourly_price_nanos = in.hourly_price_nanos == 0
                                ? u.hourly_price_nanos
                                : std::min(in.hourly_price_nanos, u.hourly_price_nanos);
    in.workloads.push_back({u.workload, u.memory_peak_bytes,
                            rightsizing::ComputeAt(u, o.summary.compute_percentile),
                            u.gpus_held_ppd});
    g.members[u.workload] = &a.summary;
  }
  rightsizing::ConsolidationOptions options = o.consolidate;
  options.memory_headroom = o.recommend.memory_headroom;
  const TimeRange span = HoursOfRows(advice);
  std::vector<rightsizing::ConsolidationPlan> plans;
  for (const auto& entry : groups) {
    const Group& g = entry.second;  // named, not bound: a lambda below captures it
    if (g.input.workloads.size() < 2) continue;
    auto plan_for = [&](const rightsizing::ConsolidationInput& input) {
      rightsizing::ConsolidationPlan plan = rightsizing::PlanConsolidation(input, options);
      ReplayConsolidation(plan, g.members, input.gpu_memory_bytes, input.hourly_price_nanos, span);
      return plan;
    };
    rightsizing::ConsolidationPlan plan =
        PlanLeavingOutWhatFreesLess(g.input, plan_for, options.exact_max_items);
    plan.left_alone.insert(plan.left_alone.end(), g.left_alone.begin(), g.left_alone.end());
    if (!plan.moves.empty() && plan.monthly_saving_nanos > 0) plans.push_back(std::move(plan));
  }
  std::stable_sort(plans.begin(), plans.end(), [](const auto& a, const auto& b) {
    return a.monthly_saving_nanos > b.monthly_saving_nanos;
  });
  return plans;
}

}  // namespace

std::map<std::string, std::vector<rightsizing::ModelPrice>> ModelsByClass(
    const cost::Catalog& catalog) {
  std::map<std::string, std::vector<rightsizing::ModelPrice>> out;
  for (const cost::PriceEntry& e : catalog.entries) {
    if (!e.region.empty()) continue;
    const Bytes memory = cost::GpuModelMemory(e.gpu_model);
    if (memory == 0) continue;
    std::vector<rightsizing::ModelPrice>& models = out[e.pricing_class];
    const bool listed = std::any_of(models.begin(), models.end(),
                                    [&](const auto& m) { return m.gpu_model == e.gpu_model; });
    if (!listed) models.push_back({e.gpu_model, memory, e.hourly_nanos, SpeedOf(e.gpu_model)});
  }
  for (auto& [cls, models] : out)
    std::sort(models.begin(), models.end(), [](const auto& a, const auto& b) {
      return std::tie(a.hourly_price_nanos, a.gpu_model) <
             std::tie(b.hourly_price_nanos, b.gpu_model);
    });
  return out;
}

std::string FormatGpus(SharePpd ppd) {
  if (ppd % kWholeGpu == 0) {
    const SharePpd n = ppd / kWholeGpu;
    return fmt::format("{} GPU{}", n, n == 1 ? "" : "s");
  }
  return fmt::format("{:.3g} GPU", static_cast<double>(ppd) / static_cast<double>(kWholeGpu));
}

Result<RightsizePlan> PlanRightsizing(std::span<const DeviceHour> devices,
                                      std::span<const UsageRow> usage,
                                      const RightsizeOptions& options) {
  auto summaries = SummarizeWorkloads(devices, usage, options.summary);
  if (!summaries) return summaries.error();
  return PlanRightsizing(std::move(*summaries), options);
}

Result<RightsizePlan> PlanRightsizing(std::vector<WorkloadSummary> summaries,
                                      const RightsizeOptions& options) {
  RightsizePlan plan;
  for (WorkloadSummary& s : summaries) {
    if (!options.workload.empty() && s.usage.workload != options.workload) continue;
    if (s.usage.gpus_held_ppd <= 0) continue;  // holds no GPU (a device plugin): nothing to size
    // Every saving is at most a month of what the workload holds: when that month fits in 64
    // bits of nanos, so do they and their sums are checked below (issue 58).
    if (__int128 month = static_cast<__int128>(s.usage.gpus_held_ppd) * s.usage.hourly_price_nanos *
                         rightsizing::kHoursPerMonth / kWholeGpu;
        month > INT64_MAX)
      return InvalidArgument(fmt::format(
          "window: a month of what '{}' holds ({} at {} nanos an hour each) passes the largest "
          "amount gpuledger holds ({} nanos); check its price",
          s.usage.workload, FormatGpus(s.usage.gpus_held_ppd), s.usage.hourly_price_nanos,
          INT64_MAX));
    WorkloadAdvice a;
    a.ranked = rightsizing::Recommend(s.usage, options.recommend);
    ReplayRanked(a.ranked, s.usage, s.demand, options.recommend);
    a.summary = std::move(s);
    plan.workloads.push_back(std::move(a));
  }
  if (!options.workload.empty() && plan.workloads.empty())
    return InvalidArgument(fmt::format(
        "workload: '{}' has no GPU rows in the window (expected NAMESPACE/KIND/NAME as the "
        "report's controller key, e.g. ml/Deployment/train)",
        options.workload));
  std::stable_sort(plan.workloads.begin(), plan.workloads.end(),
                   [](const WorkloadAdvice& a, const WorkloadAdvice& b) {
                     return std::make_tuple(-BestSaving(a), a.summary.usage.workload) <
                            std::make_tuple(-BestSaving(b), b.summary.usage.workload);
                   });
  plan.consolidation = Consolidate(plan.workloads, options);

  std::set<std::string> moved;
  SavingSum plans_sum;
  for (const auto& p : plan.consolidation) {
    plans_sum.Add(p.monthly_saving_nanos);
    for (const rightsizing::Move& m : p.moves) moved.insert(m.workload);
  }
  SavingSum own;
  for (const WorkloadAdvice& a : plan.workloads) {
    own.Add(BestSaving(a));
    if (!moved.count(a.summary.usage.workload)) plans_sum.Add(BestSaving(a));
  }
  auto by_actions = own.Value("total of the workloads' savings");
  if (!by_actions) return by_actions.error();
  auto by_plans = plans_sum.Value("total of the consolidation plans' savings");
  if (!by_plans) return by_plans.error();
  if (!plan.consolidation.empty() && *by_plans > *by_actions) {
    plan.total_monthly_saving_nanos = *by_plans;
    plan.total_basis = fmt::format(
        "the consolidation plans, plus the best action of the {} workloads they do "
        "not move",
        plan.workloads.size() - moved.size());
  } else {
    plan.total_monthly_saving_nanos = *by_actions;
    plan.total_basis = "each workload's best action";
  }
  return plan;
}

}  // namespace gpuledger::recommendations
