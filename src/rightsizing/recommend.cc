#include "rightsizing/recommend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "common/enum_names.h"
#include "common/money.h"
#include "common/rounding.h"
#include "rightsizing/mig_profiles.h"

namespace gpuledger::rightsizing {
namespace {

std::string Gib(Bytes b) { return fmt::format("{:.1f} GiB", static_cast<double>(b) / kGiB); }
std::string Pct(double f) { return fmt::format("{:.0f}%", f * 100); }
std::string Gpus(SharePpd ppd) {
  return fmt::format("{:.2f}", static_cast<double>(ppd) / static_cast<double>(kWholeGpu));
}

// How much slower `to` is than `from` for a workload bound by `bound` (2.0: it does half the
// work in the same time), and the sentence that says why; nullopt when a speed it needs is not
// known.
struct SpeedRatio {
  double ratio = 0;
  std::string why;
};
std::optional<SpeedRatio> Slowdown(const std::string& from_model, const GpuSpeed& from,
                                   const std::string& to_model, const GpuSpeed& to, Bound bound) {
  const bool bandwidth = from.memory_bandwidth_gbs > 0 && to.memory_bandwidth_gbs > 0;
  const bool flops = from.fp16_dense_tflops > 0 && to.fp16_dense_tflops > 0;
  if (!bandwidth || (bound == Bound::kUnknown && !flops)) return std::nullopt;
  const double by_bandwidth = from.memory_bandwidth_gbs / to.memory_bandwidth_gbs;
  const std::string bandwidth_why =
      fmt::format("memory bandwidth {:.0f} GB/s on the {} against {:.0f} on the {}",
                  to.memory_bandwidth_gbs, to_model, from.memory_bandwidth_gbs, from_model);
  if (bound == Bound::kMemoryBandwidth)
    return SpeedRatio{by_bandwidth, "it is memory-bound, so " + bandwidth_why + " binds"};
  const double by_flops = from.fp16_dense_tflops / to.fp16_dense_tflops;
  const std::string flops_why =
      fmt::format("dense FP16 {:.0f} TFLOPS on the {} against {:.0f} on the {}",
                  to.fp16_dense_tflops, to_model, from.fp16_dense_tflops, from_model);
  if (by_bandwidth >= by_flops)
    return SpeedRatio{by_bandwidth, fmt::format("what bounds it is not known, so the stricter of "
                                                "{} and {} binds: the bandwidth",
                                                bandwidth_why, flops_why)};
  return SpeedRatio{by_flops, fmt::format("what bounds it is not known, so the stricter of {} and "
                                          "{} binds: the FP16 throughput",
                                          bandwidth_why, flops_why)};
}

}  // namespace

constexpr NameTable<Percentile, 3> kPercentiles = {
    {{Percentile::kP50, "p50"}, {Percentile::kP95, "p95"}, {Percentile::kP99, "p99"}}};

std::string_view PercentileName(Percentile p) { return NameIn(kPercentiles, p, "p95"); }

std::optional<Percentile> ParsePercentile(std::string_view text) {
  return ValueIn(kPercentiles, text);
}

int PercentOf(Percentile p) {
  switch (p) {
    case Percentile::kP50:
      return 50;
    case Percentile::kP99:
      return 99;
    case Percentile::kP95:
      break;
  }
  return 95;
}

double ComputeAt(const WorkloadUsage& u, Percentile p) {
  switch (p) {
    case Percentile::kP50:
      return u.compute_p50;
    case Percentile::kP99:
      return u.compute_p99;
    case Percentile::kP95:
      break;
  }
  return u.compute_p95;
}

std::string Confidence(double days_observed, double coverage, const RightsizingOptions& o) {
  if (days_observed >= o.min_days_high && coverage >= o.min_coverage_high) return "high";
  if (days_observed >= o.min_days_medium && coverage >= o.min_coverage_medium) return "medium";
  return "low";
}

Nanos HourlyCost(SharePpd share_ppd, Nanos hourly_price_nanos) {
  return RoundHalfUp(static_cast<__int128>(share_ppd) * hourly_price_nanos, kWholeGpu);
}

Nanos MonthlySaving(SharePpd held_ppd, Nanos held_price_nanos, SharePpd recommended_ppd,
                    Nanos recommended_price_nanos) {
  __int128 diff = static_cast<__int128>(held_ppd) * held_price_nanos -
                  static_cast<__int128>(recommended_ppd) * recommended_price_nanos;
  return RoundHalfUp(diff * kHoursPerMonth, kWholeGpu);
}

namespace {

// What every move of one workload is sized and explained from, and the moves offered.
struct Moves {
  Moves(const WorkloadUsage& u, const RightsizingOptions& o)
      : u(u),
        o(o),
        days(u.hours_observed / 24.0),
        confidence(Confidence(days, u.coverage, o)),
        current_hourly(HourlyCost(u.gpus_held_ppd, u.hourly_price_nanos)),
        pct_name(PercentileName(o.compute_percentile)),
        compute(std::clamp(ComputeAt(u, o.compute_percentile), 0.0, 1.0)),
        memory_seen(o.use_p99_memory ? u.memory_p99_bytes : u.memory_peak_bytes),
        memory_name(o.use_p99_memory ? "p99" : "peak"),
        memory_needed(WithHeadroom(memory_seen, o.memory_headroom)),
        // Whole GPUs it needs: the busy ones, at least one.
        needed_gpus(
            std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(u.gpus_used - 1e-9)))),
        needed_ppd(needed_gpus * kWholeGpu) {}

  Recommendation Base(Action action) const {
    Recommendation r;
    r.workload = u.workload;
    r.action = action;
    r.gpu_model = u.gpu_model;
    r.current_hourly_nanos = current_hourly;
    r.confidence = confidence;
    r.days_observed = days;
    r.coverage = u.coverage;
    r.reasons.push_back(
        fmt::format("Confidence is {}: {:.1f} days observed "
                    "with {} coverage of the window.",
                    confidence, days, Pct(u.coverage)));
    return r;
  }
  std::vector<Recommendation> Keep(std::string why) const {
    Recommendation r = Base(Action::kKeep);
    r.recommended_ppd = u.gpus_held_ppd;
    r.recommended_hourly_nanos = current_hourly;
    r.reasons.insert(r.reasons.begin(), std::move(why));
    return std::vector<Recommendation>{std::move(r)};
  }
  std::string UsageLine() const {
    return fmt::format(
        "It held {} {} GPUs on average and kept {:.2f} busy; {} compute was {} "
        "of one GPU and the "
        "memory {} was {} per GPU ({} with the {:.2f}x headroom).",
        Gpus(u.gpus_held_ppd), u.gpu_model, u.gpus_used, pct_name, Pct(compute), memory_name,
        Gib(memory_seen), Gib(memory_needed), o.memory_headroom);
  }

  // Every move is sized by compute: `need` of what it is given, `capacity`. Its margin,
  // capacity / need - 1, must hold the figure's measured band for "high" (issue 59).
  void Offer(Recommendation r, SharePpd ppd, Nanos price, double need, double capacity,
             Layout layout) {
    r.recommended_ppd = ppd;
    r.layout = layout;
    r.recommended_hourly_nanos = HourlyCost(ppd, price);
    r.monthly_saving_nanos = MonthlySaving(u.gpus_held_ppd, u.hourly_price_nanos, ppd, price);
    if (r.monthly_saving_nanos <= std::max<Nanos>(0, o.min_monthly_saving_nanos)) return;
    r.reasons.insert(
        r.reasons.begin() + 1,
        fmt::format("That costs {} an hour instead of {}, saving {} a month (730 h).",
                    DisplayMoney(r.recommended_hourly_nanos), DisplayMoney(current_hourly),
                    DisplayMoney(r.monthly_saving_nanos)));
    r.reasons.insert(r.reasons.begin() + 1, UsageLine());
    const double margin = need > 0 ? capacity / need - 1 : INFINITY;
    if (r.confidence == "high" && u.compute_band && *u.compute_band > margin) {
      r.confidence = "medium";
      r.reasons.push_back(fmt::format(
          "Not high: its compute figure (rule '{}') was measured off by up to {} on real GPUs, "
          "more than the {} of room this move leaves.",
          u.compute_rule, Pct(*u.compute_band), Pct(margin)));
    }
    out.push_back(std::move(r));
  }

  // Fewer GPUs, or fewer replicas where each holds one.
  void OfferFewer() {
    if (needed_ppd < u.gpus_held_ppd && u.replica_per_gpu) {
      // Its replicas hold a GPU each: scale the controller, not each pod's request.
      Recommendation r = Base(Action::kFewerReplicas);
      r.target = fmt::format("{} replica{}", needed_gpus, needed_gpus == 1 ? "" : "s");
      r.reasons.insert(
          r.reasons.begin(),
          fmt::format("Scale it to {} instead of the {} it ran on average: each replica holds one "
                      "{} GPU, and it kept only {:.2f} of them busy, the rest were held idle.",
                      r.target, Gpus(u.gpus_held_ppd), u.gpu_model, u.gpus_used));
      Offer(std::move(r), needed_ppd, u.hourly_price_nanos, u.gpus_used,
            static_cast<double>(needed_gpus), Layout{needed_gpus, 1.0, 0});
    } else if (needed_ppd < u.gpus_held_ppd) {
      Recommendation r = Base(Action::kFewerGpus);
      r.target = fmt::format("{} GPU{}", needed_gpus, needed_gpus == 1 ? "" : "s");
      r.reasons.insert(r.reasons.begin(),
                       fmt::format("Request {} instead of {} {} GPUs: it kept only {:.2f} of them "
                                   "busy, the rest were held idle.",
                                   r.target, Gpus(u.gpus_held_ppd), u.gpu_model, u.gpus_used));
      Offer(std::move(r), needed_ppd, u.hourly_price_nanos, u.gpus_used,
            static_cast<double>(needed_gpus), Layout{needed_gpus, 1.0, 0});
    }
  }

  // Sharing one GPU: time-slicing, a MIG instance.
  void OfferSharing() {
    // Time-slicing: the smallest power-of-two share covering compute and
    // memory.
    int replicas = 1;
    const int max_replicas = std::clamp(o.max_time_slice_replicas, 1, 16);
    while (replicas * 2 <= max_replicas && compute <= 1.0 / (replicas * 2) + 1e-12 &&
           u.gpu_memory_bytes > 0 &&
           static_cast<__int128>(memory_needed) * (replicas * 2) <= u.gpu_memory_bytes) {
      replicas *= 2;
    }
    if (replicas > 1) {
      Recommendation r = Base(Action::kTimeSlice);
      r.target = fmt::format("1/{}", replicas);
      r.reasons.insert(r.reasons.begin(),
                       fmt::format("Share a {} by time-slicing at 1/{}: {} compute of {} fits "
                                   "1/{} of the GPU, and {} of memory fits 1/{} of its {}. "
                                   "Time-slicing does not isolate memory; the replicas must "
                                   "keep to their part.",
                                   u.gpu_model, replicas, pct_name, Pct(compute), replicas,
                                   Gib(memory_needed), replicas, Gib(u.gpu_memory_bytes)));
      Offer(std::move(r), kWholeGpu / replicas, u.hourly_price_nanos, compute, 1.0 / replicas,
            Layout{1, 1.0 / replicas, u.gpu_memory_bytes / replicas});
    }
    if (auto p = SmallestFittingProfile(u.gpu_model, memory_needed, compute);
        p && p->compute_slices < p->total_slices) {
      Recommendation r = Base(Action::kMigProfile);
      r.target = p->name;
      r.reasons.insert(r.reasons.begin(),
                       fmt::format("Use a MIG {} instance of the {}: it is the smallest profile "
                                   "with at "
                                   "least {} of memory ({} nominal) and {} of the compute ({}/{} "
                                   "slices, "
                                   "{} needed at {}); it is priced at its {} of {} compute slices.",
                                   p->name, u.gpu_model, Gib(memory_needed), Gib(p->memory_bytes),
                                   Pct(static_cast<double>(p->compute_slices) / p->total_slices),
                                   p->compute_slices, p->total_slices, Pct(compute), pct_name,
                                   p->compute_slices, p->total_slices));
      const double slices = static_cast<double>(p->compute_slices) / p->total_slices;
      Offer(std::move(r), kWholeGpu / p->total_slices * p->compute_slices, u.hourly_price_nanos,
            compute, slices, Layout{1, slices, p->memory_bytes});
    }
  }

  // A cheaper model with the memory that keeps up: the compute need scaled by how much slower
  // it is for this workload (issue 59: 14% of an H200 was sent to a T4, which has 1/15 of its
  // memory bandwidth). The cheapest that keeps up is offered; the cheapest that does not, when
  // cheaper still, is named in every answer's reasons. Returns the reason
  // naming the one that does not keep up ("" when none).
  std::string OfferCheaperModel() {
    const ModelPrice* best = nullptr;
    const ModelPrice* too_slow = nullptr;
    std::optional<SpeedRatio> best_ratio, too_slow_ratio;
    for (const ModelPrice& m : u.other_models) {
      if (m.gpu_model == u.gpu_model || m.memory_bytes < memory_needed ||
          m.hourly_price_nanos >= u.hourly_price_nanos)
        continue;
      auto slower = Slowdown(u.gpu_model, u.speed, m.gpu_model, m.speed, u.bound);
      if (slower && compute * slower->ratio <= o.max_compute_on_other_model) {
        if (best == nullptr || m.hourly_price_nanos < best->hourly_price_nanos) {
          best = &m;
          best_ratio = slower;
        }
      } else if (slower &&
                 (too_slow == nullptr || m.hourly_price_nanos < too_slow->hourly_price_nanos)) {
        too_slow = &m;
        too_slow_ratio = slower;
      }
    }
    std::string rejected;
    if (too_slow != nullptr &&
        (best == nullptr || too_slow->hourly_price_nanos < best->hourly_price_nanos))
      rejected = fmt::format(
          "Not the cheaper {}: {}; {} compute {} of the {} would be {} of a {}, above the {} "
          "a move may take.",
          too_slow->gpu_model, too_slow_ratio->why, pct_name, Pct(compute), u.gpu_model,
          Pct(compute * too_slow_ratio->ratio), too_slow->gpu_model,
          Pct(o.max_compute_on_other_model));
    if (best != nullptr) {
      Recommendation r = Base(Action::kCheaperModel);
      r.target = best->gpu_model;
      r.gpu_model = best->gpu_model;
      r.reasons.insert(
          r.reasons.begin(),
          fmt::format("Move to {} {} GPU{}: the cheapest model in the catalog whose {} of memory "
                      "holds {} and that keeps up: {}; {} compute {} of the {} is {} of a {}, "
                      "within the {} a move may take (datasheet speeds; its compute there is not "
                      "measured).",
                      needed_gpus, best->gpu_model, needed_gpus == 1 ? "" : "s",
                      Gib(best->memory_bytes), Gib(memory_needed), best_ratio->why, pct_name,
                      Pct(compute), u.gpu_model, Pct(compute * best_ratio->ratio), best->gpu_model,
                      Pct(o.max_compute_on_other_model)));
      // The other model does one of its GPUs' work, 1 / ratio of one of these.
      Offer(std::move(r), needed_ppd, best->hourly_price_nanos, compute * best_ratio->ratio,
            o.max_compute_on_other_model,
            Layout{needed_gpus, 1.0 / best_ratio->ratio, best->memory_bytes});
    }
    return rejected;
  }

  // Nothing used: give the GPUs back.
  void OfferRelease() {
    if (u.hours_observed >= o.release_min_hours && u.gpus_used <= 0 &&
        u.compute_of_allocation <= o.release_max_compute) {
      Recommendation r = Base(Action::kRelease);
      r.target = "0 GPUs";
      r.reasons.insert(
          r.reasons.begin(),
          fmt::format(
              "Release its {} {} GPUs: over {:.0f} hours held it computed {:.2f}% of what it "
              "held and no hour busy, within the {} that counts as idle (the "
              "idle-allocation finding's rule; `gpuledger audit` shows it).",
              Gpus(u.gpus_held_ppd), u.gpu_model, u.hours_observed, u.compute_of_allocation * 100,
              Pct(o.release_max_compute)));
      Offer(std::move(r), 0, u.hourly_price_nanos, u.compute_of_allocation, o.release_max_compute,
            Layout{});
    }
  }

  // The moves offered, most saved first (else: keep it), each naming `rejected` where given.
  std::vector<Recommendation> Finish(const std::string& rejected) && {
    if (out.empty()) {
      out = Keep(fmt::format("Keep it as it is: no smaller layout saves money. {}", UsageLine()));
    } else {
      std::stable_sort(out.begin(), out.end(),
                       [](const Recommendation& a, const Recommendation& b) {
                         if (a.monthly_saving_nanos != b.monthly_saving_nanos)
                           return a.monthly_saving_nanos > b.monthly_saving_nanos;
                         return a.action < b.action;
                       });
    }
    if (!rejected.empty())
      for (Recommendation& r : out) r.reasons.push_back(rejected);
    return std::move(out);
  }

  const WorkloadUsage& u;
  const RightsizingOptions& o;
  const double days;
  const std::string confidence;
  const Nanos current_hourly;
  const std::string pct_name;
  const double compute;
  const Bytes memory_seen;
  const std::string memory_name;
  const Bytes memory_needed;
  const std::int64_t needed_gpus;
  const SharePpd needed_ppd;
  std::vector<Recommendation> out;
};

}  // namespace

std::vector<Recommendation> Recommend(const WorkloadUsage& u, const RightsizingOptions& o) {
  Moves moves(u, o);
  if (u.gpus_held_ppd <= 0)
    return moves.Keep("It held no GPU in the window, so there is nothing to size.");
  if (u.hours_observed <= 0)
    return moves.Keep(
        "No usage was observed in the window, so no recommendation can "
        "be made.");
  if (!u.compute_band) {
    std::vector<Recommendation> unsized = moves.Keep(fmt::format(
        "Keep it as it is: its compute is an estimate by rule '{}', never measured against real "
        "GPU time (docs/attribution.md), so no move is sized by it (issue 59: MIG presence "
        "counted 48 GPU-hours where 3.3 were used). Its memory peak was {} per GPU.",
        u.compute_rule, Gib(u.memory_peak_bytes)));
    unsized[0].confidence = "low";
    unsized[0].reasons.back() = "Confidence is low: what it computed is not known.";
    return unsized;
  }
  moves.OfferFewer();
  if (moves.needed_gpus == 1) moves.OfferSharing();  // only a workload that fits on one
  const std::string rejected = moves.OfferCheaperModel();
  moves.OfferRelease();
  return std::move(moves).Finish(rejected);
}

}  // namespace gpuledger::rightsizing
