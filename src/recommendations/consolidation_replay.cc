#include "recommendations/consolidation_replay.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/money.h"
#include "rightsizing/recommend.h"

namespace gpuledger::recommendations {
namespace {

// A GPU of the plan: per hour of the span, its workloads' compute and memory added, and how
// many ran.
struct PlannedGpu {
  std::vector<float> compute;
  std::vector<std::uint64_t> memory_mib;
  std::vector<std::uint16_t> running;
};

// A workload's busiest GPU per hour of the span it ran in (its demand's shard 0).
struct HourLoad {
  std::size_t hour = 0;  // index in the span
  float compute = 0;
  std::uint32_t memory_mib = 0;
};

std::vector<HourLoad> LoadOf(const WorkloadSummary& s, const TimeRange& span) {
  std::vector<HourLoad> out;
  const DemandSeries& d = s.demand;
  for (std::size_t i = 0; i < d.hours.size(); ++i) {
    const auto [begin, end] = d.Gpus(i);
    if (begin == end || d.hours[i] < span.from_us || d.hours[i] >= span.to_us) continue;
    out.push_back({static_cast<std::size_t>((d.hours[i] - span.from_us) / kMicrosPerHour),
                   std::max(d.compute[begin], 0.0f), d.memory_mib[begin]});
  }
  return out;
}

}  // namespace

void ReplayConsolidation(rightsizing::ConsolidationPlan& plan,
                         const std::map<std::string, const WorkloadSummary*>& members,
                         Bytes gpu_memory_bytes, Nanos hourly_price_nanos, const TimeRange& span) {
  const std::int64_t hours =
      std::max<std::int64_t>(0, (span.to_us - span.from_us + kMicrosPerHour - 1) / kMicrosPerHour);
  const std::uint64_t memory_mib =
      static_cast<std::uint64_t>(std::max<Bytes>(0, gpu_memory_bytes)) /
      static_cast<std::uint64_t>(kMiB);
  std::vector<PlannedGpu> gpus;
  auto within = [&](float compute, std::uint64_t mib) {
    return compute <= 1.0f + 1e-6f && mib <= memory_mib;
  };
  auto fits = [&](const PlannedGpu& g, const std::vector<HourLoad>& load) {
    return std::all_of(load.begin(), load.end(), [&](const HourLoad& l) {
      return within(g.compute[l.hour] + l.compute, g.memory_mib[l.hour] + l.memory_mib);
    });
  };
  auto add = [&](PlannedGpu& g, const std::vector<HourLoad>& load) {
    for (const HourLoad& l : load) {
      g.compute[l.hour] += l.compute;
      g.memory_mib[l.hour] += l.memory_mib;
      ++g.running[l.hour];
    }
  };
  auto new_gpu = [&] {
    PlannedGpu& g = gpus.emplace_back();
    g.compute.assign(static_cast<std::size_t>(hours), 0.0f);
    g.memory_mib.assign(static_cast<std::size_t>(hours), 0);
    g.running.assign(static_cast<std::size_t>(hours), 0);
    return gpus.size() - 1;
  };
  for (int i = 0; i < plan.gpus_after; ++i) new_gpu();

  // The moves as planned where they fit every hour; else the first GPU they do, else a new one.
  __int128 held_ppd_hours = 0;
  int changed = 0;
  std::vector<rightsizing::Move> kept;
  for (rightsizing::Move m : plan.moves) {
    const WorkloadSummary& s = *members.at(m.workload);
    const std::vector<HourLoad> load = LoadOf(s, span);
    if (!std::all_of(load.begin(), load.end(),
                     [&](const HourLoad& l) { return within(l.compute, l.memory_mib); })) {
      plan.left_alone.push_back(
          fmt::format("{}: in some hour it alone passes one GPU's compute or memory", m.workload));
      continue;
    }
    std::size_t to = static_cast<std::size_t>(m.target_gpu);
    if (!fits(gpus[to], load)) {
      to = 0;
      while (to < gpus.size() && !fits(gpus[to], load)) ++to;
      if (to == gpus.size()) to = new_gpu();
      ++changed;
    }
    add(gpus[to], load);
    m.target_gpu = static_cast<int>(to);
    kept.push_back(std::move(m));
    held_ppd_hours += static_cast<__int128>(s.usage.gpus_held_ppd) *
                      static_cast<std::int64_t>(s.usage.hours_observed);
  }
  // GPUs no workload kept are not the plan's; the others numbered again in order, and counted
  // in the hours one of their workloads ran.
  std::vector<bool> holds(gpus.size(), false);
  for (const rightsizing::Move& m : kept) holds[static_cast<std::size_t>(m.target_gpu)] = true;
  std::vector<int> number(gpus.size(), -1);
  int used = 0;
  std::int64_t planned_gpu_hours = 0;
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    if (!holds[g]) continue;
    number[g] = used++;
    planned_gpu_hours += std::count_if(gpus[g].running.begin(), gpus[g].running.end(),
                                       [](std::uint16_t r) { return r > 0; });
  }
  for (rightsizing::Move& m : kept) m.target_gpu = number[static_cast<std::size_t>(m.target_gpu)];
  std::stable_sort(kept.begin(), kept.end(),
                   [](const auto& x, const auto& y) { return x.target_gpu < y.target_gpu; });
  plan.moves = std::move(kept);
  plan.gpus_after = used;
  plan.optimal = plan.optimal && changed == 0;

  // Averages over the span's hours, rounded half up once.
  auto average = [&](__int128 ppd_hours) -> SharePpd {
    return hours == 0 ? 0 : static_cast<SharePpd>((2 * ppd_hours + hours) / (2 * hours));
  };
  plan.gpus_before_ppd = average(held_ppd_hours);
  const SharePpd after_ppd = average(static_cast<__int128>(planned_gpu_hours) * kWholeGpu);
  plan.gpus_freed_ppd = plan.gpus_before_ppd - after_ppd;
  plan.monthly_saving_nanos =
      plan.gpus_freed_ppd > 0 ? rightsizing::MonthlySaving(plan.gpus_freed_ppd, hourly_price_nanos,
                                                           0, hourly_price_nanos)
                              : 0;
  const double before = static_cast<double>(plan.gpus_before_ppd) / kWholeGpu;
  const double after = static_cast<double>(after_ppd) / kWholeGpu;
  plan.reasons = {
      fmt::format("{} low-use workload{} of {} in pool '{}' held {:.2f} GPUs on average over the "
                  "{} hour{} of the window's rows ({:.1f} GPU-hours); on {} GPU{} ({}) they "
                  "would have needed {:.2f} on average ({} GPU-hours: a GPU counts in an hour "
                  "when one of its workloads ran then).",
                  plan.moves.size(), plan.moves.size() == 1 ? "" : "s", plan.gpu_model, plan.pool,
                  before, hours, hours == 1 ? "" : "s",
                  static_cast<double>(held_ppd_hours) / kWholeGpu, plan.gpus_after,
                  plan.gpus_after == 1 ? "" : "s",
                  plan.optimal ? "packed by peaks, the fewest possible"
                               : "packed by peaks, first-fit-decreasing, not proven the fewest",
                  after, planned_gpu_hours),
      fmt::format("Replayed hour by hour: no GPU's co-located hourly memory peaks or compute pass "
                  "one GPU in any hour{}.",
                  changed == 0 ? ""
                               : fmt::format(" ({} move{} changed by the replay to keep it so)",
                                             changed, changed == 1 ? "" : "s"))};
  if (plan.monthly_saving_nanos > 0)
    plan.reasons.push_back(
        fmt::format("That frees {:.2f} GPUs, {} a month at {} per GPU-hour (730 h).",
                    static_cast<double>(plan.gpus_freed_ppd) / kWholeGpu,
                    DisplayMoney(plan.monthly_saving_nanos), DisplayMoney(hourly_price_nanos)));
  else
    plan.reasons.push_back("Laid out so they free no GPU: keep them where they are.");
}

}  // namespace gpuledger::recommendations
