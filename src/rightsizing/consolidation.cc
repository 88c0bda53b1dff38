#include "rightsizing/consolidation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <optional>

#include "common/money.h"
#include "rightsizing/mig_profiles.h"
#include "rightsizing/recommend.h"

namespace gpuledger::rightsizing {
namespace {

std::int64_t CeilDiv(std::int64_t n, std::int64_t d) { return n <= 0 ? 0 : (n + d - 1) / d; }

// The exact search over items in `order`: each item goes into an open bin it
// fits, or one new bin. Bins with equal loads are interchangeable, so only the
// first of them is tried.
class BranchAndBound {
 public:
  BranchAndBound(std::span<const PackItem> items, std::vector<int> order, std::int64_t cap_a,
                 std::int64_t cap_b, int best, std::vector<int> best_bin_of, int lower_bound)
      : items_(items),
        order_(std::move(order)),
        cap_a_(cap_a),
        cap_b_(cap_b),
        best_(best),
        best_bin_of_(std::move(best_bin_of)),
        lower_bound_(lower_bound),
        bin_of_(items.size(), -1) {
    rem_a_.assign(order_.size() + 1, 0);
    rem_b_.assign(order_.size() + 1, 0);
    for (std::size_t k = order_.size(); k-- > 0;) {
      rem_a_[k] = rem_a_[k + 1] + items_[order_[k]].a;
      rem_b_[k] = rem_b_[k + 1] + items_[order_[k]].b;
    }
  }

  void Run() {
    if (best_ > lower_bound_) Place(0);
  }
  int best() const { return best_; }
  const std::vector<int>& best_bin_of() const { return best_bin_of_; }

 private:
  void Place(std::size_t k) {
    if (best_ == lower_bound_) return;  // cannot do better
    const int open = static_cast<int>(load_a_.size());
    if (k == order_.size()) {
      if (open < best_) {
        best_ = open;
        best_bin_of_ = bin_of_;
      }
      return;
    }
    // What is left must fit the free room of the open bins plus new ones.
    std::int64_t free_a = 0, free_b = 0;
    for (int j = 0; j < open; ++j) {
      free_a += cap_a_ - load_a_[j];
      free_b += cap_b_ - load_b_[j];
    }
    std::int64_t extra =
        std::max(CeilDiv(rem_a_[k] - free_a, cap_a_), CeilDiv(rem_b_[k] - free_b, cap_b_));
    if (open + extra >= best_) return;

    const int i = order_[k];
    const PackItem& it = items_[i];
    for (int j = 0; j < open; ++j) {
      if (load_a_[j] + it.a > cap_a_ || load_b_[j] + it.b > cap_b_) continue;
      bool seen = false;
      for (int q = 0; q < j && !seen; ++q)
        seen = load_a_[q] == load_a_[j] && load_b_[q] == load_b_[j];
      if (seen) continue;
      load_a_[j] += it.a;
      load_b_[j] += it.b;
      bin_of_[i] = j;
      Place(k + 1);
      load_a_[j] -= it.a;
      load_b_[j] -= it.b;
      if (best_ == lower_bound_) return;
    }
    if (open + 1 < best_) {
      load_a_.push_back(it.a);
      load_b_.push_back(it.b);
      bin_of_[i] = open;
      Place(k + 1);
      load_a_.pop_back();
      load_b_.pop_back();
    }
    bin_of_[i] = -1;
  }

  std::span<const PackItem> items_;
  std::vector<int> order_;
  std::int64_t cap_a_, cap_b_;
  int best_;
  std::vector<int> best_bin_of_;
  int lower_bound_;
  std::vector<int> bin_of_;
  std::vector<std::int64_t> load_a_, load_b_;
  std::vector<std::int64_t> rem_a_, rem_b_;
};

}  // namespace

Packing PackTwoDimensional(std::span<const PackItem> items, std::int64_t cap_a, std::int64_t cap_b,
                           int exact_max_items) {
  if (cap_a <= 0 || cap_b <= 0) std::abort();
  for (const PackItem& it : items)
    if (it.a < 0 || it.b < 0 || it.a > cap_a || it.b > cap_b) std::abort();  // caller's invariant

  Packing out;
  if (items.empty()) {
    out.optimal = true;
    return out;
  }
  // Decreasing by the larger relative size (a/cap_a vs b/cap_b,
  // cross-multiplied), then by the sum of both, then input order.
  auto key = [&](const PackItem& it) {
    return std::max(static_cast<__int128>(it.a) * cap_b, static_cast<__int128>(it.b) * cap_a);
  };
  auto sum = [&](const PackItem& it) {
    return static_cast<__int128>(it.a) * cap_b + static_cast<__int128>(it.b) * cap_a;
  };
  std::vector<int> order(items.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
    if (key(items[x]) != key(items[y])) return key(items[x]) > key(items[y]);
    return sum(items[x]) > sum(items[y]);
  });

  // First-fit-decreasing.
  std::vector<std::int64_t> la, lb;
  out.bin_of.assign(items.size(), -1);
  for (int i : order) {
    std::size_t j = 0;
    while (j < la.size() && (la[j] + items[i].a > cap_a || lb[j] + items[i].b > cap_b)) ++j;
    if (j == la.size()) {
      la.push_back(0);
      lb.push_back(0);
    }
    la[j] += items[i].a;
    lb[j] += items[i].b;
    out.bin_of[i] = static_cast<int>(j);
  }
  out.bins = static_cast<int>(la.size());

  std::int64_t total_a = 0, total_b = 0;
  for (const PackItem& it : items) {
    total_a += it.a;
    total_b += it.b;
  }
  const int lower_bound = static_cast<int>(
      std::max<std::int64_t>(1, std::max(CeilDiv(total_a, cap_a), CeilDiv(total_b, cap_b))));
  out.optimal = out.bins == lower_bound;
  if (!out.optimal && static_cast<int>(items.size()) <= exact_max_items) {
    BranchAndBound search(items, order, cap_a, cap_b, out.bins, out.bin_of, lower_bound);
    search.Run();
    out.bins = search.best();
    out.bin_of = search.best_bin_of();
    out.optimal = true;
  }
  return out;
}

ConsolidationPlan PlanConsolidation(const ConsolidationInput& in, const ConsolidationOptions& o) {
  ConsolidationPlan plan;
  plan.gpu_model = in.gpu_model;
  plan.pool = in.pool;

  const std::vector<MigProfile>* profiles = o.mig ? MigProfilesFor(in.gpu_model) : nullptr;
  if (o.mig && profiles == nullptr) {
    plan.reasons.push_back(
        fmt::format("{} has no MIG profiles, so nothing was packed into MIG "
                    "instances.",
                    in.gpu_model));
    for (const auto& w : in.workloads) plan.left_alone.push_back(w.workload + ": no MIG");
    plan.optimal = true;
    return plan;
  }

  std::vector<PackItem> items;
  std::vector<const ConsolidationWorkload*> packed;
  std::vector<std::string> profile_of;
  std::int64_t cap_a = kWholeGpu, cap_b = kWholeGpu;
  if (profiles != nullptr) {
    cap_a = profiles->front().total_slices;
    cap_b = profiles->front().total_memory_slices;
  }
  for (const auto& w : in.workloads) {
    const double compute = std::clamp(w.compute_p95, 0.0, 1.0);
    const Bytes memory = WithHeadroom(w.memory_peak_bytes, o.memory_headroom);
    if (compute > o.max_compute_share) {
      plan.left_alone.push_back(
          fmt::format("{}: p95 compute {:.0f}% is above the {:.0f}% of a "
                      "low-use workload",
                      w.workload, compute * 100, o.max_compute_share * 100));
      continue;
    }
    if (profiles != nullptr) {
      auto p = SmallestFittingProfile(in.gpu_model, memory, compute);
      if (!p) {
        plan.left_alone.push_back(w.workload + ": fits no MIG profile of " + in.gpu_model);
        continue;
      }
      items.push_back(PackItem{p->compute_slices, p->memory_slices});
      profile_of.push_back(p->name);
    } else {
      if (in.gpu_memory_bytes <= 0 || memory > in.gpu_memory_bytes) {
        plan.left_alone.push_back(
            fmt::format("{}: {:.1f} GiB with headroom does not fit one "
                        "card",
                        w.workload, static_cast<double>(memory) / kGiB));
        continue;
      }
      // Round both up, so a packed card never goes over.
      auto mem_ppd = static_cast<std::int64_t>(
          (static_cast<__int128>(memory) * kWholeGpu + in.gpu_memory_bytes - 1) /
          in.gpu_memory_bytes);
      auto cmp_ppd = static_cast<std::int64_t>(std::ceil(compute * kWholeGpu - 1e-6));
      items.push_back(PackItem{std::clamp<std::int64_t>(cmp_ppd, 0, kWholeGpu), mem_ppd});
      profile_of.emplace_back();
    }
    packed.push_back(&w);
    plan.gpus_before_ppd += w.gpus_held_ppd;
  }

  Packing packing = PackTwoDimensional(items, cap_a, cap_b, o.exact_max_items);
  plan.gpus_after = packing.bins;
  plan.optimal = packing.optimal;
  for (std::size_t i = 0; i < packed.size(); ++i)
    plan.moves.push_back(Move{packed[i]->workload, packing.bin_of[i], profile_of[i]});
  std::stable_sort(plan.moves.begin(), plan.moves.end(),
                   [](const Move& x, const Move& y) { return x.target_gpu < y.target_gpu; });
  plan.gpus_freed_ppd = plan.gpus_before_ppd - static_cast<SharePpd>(plan.gpus_after) * kWholeGpu;
  plan.monthly_saving_nanos =
      plan.gpus_freed_ppd > 0
          ? MonthlySaving(plan.gpus_freed_ppd, in.hourly_price_nanos, 0, in.hourly_price_nanos)
          : 0;

  const double before = static_cast<double>(plan.gpus_before_ppd) / kWholeGpu;
  plan.reasons.push_back(fmt::format(
      "{} low-use workloads on {} GPUs of {} in pool '{}' fit on "
      "{} GPU{} {} ({}, {:.2f}x "
      "memory headroom, p95 compute).",
      packed.size(), fmt::format("{:.2f}", before), in.gpu_model, in.pool, plan.gpus_after,
      plan.gpus_after == 1 ? "" : "s", o.mig ? "as MIG instances" : "shared",
      plan.optimal ? "the fewest possible" : "first-fit-decreasing, not proven the fewest",
      o.memory_headroom));
  if (plan.monthly_saving_nanos > 0) {
    plan.reasons.push_back(
        fmt::format("That frees {:.2f} GPUs, {} a month at {} per GPU-hour (730 h).",
                    static_cast<double>(plan.gpus_freed_ppd) / kWholeGpu,
                    DisplayMoney(plan.monthly_saving_nanos), DisplayMoney(in.hourly_price_nanos)));
  } else {
    plan.reasons.push_back("Packing them frees no GPU: keep them where they are.");
  }
  return plan;
}

}  // namespace gpuledger::rightsizing
