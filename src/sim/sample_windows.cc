#include "sim/sample_windows.h"

#include <algorithm>
#include <cmath>

#include "sim/profiles.h"

namespace gpuledger::sim {
namespace {

using world::Actor;

// A timeslice: how long "the process holding the GPU at an instant" looks back.
constexpr Micros kInstantUs = 1000;

// Who may own a sub-window [sa, sb) of `windows` sample periods, as weights per entry (MIG
// entries none), in `weight`; returns their sum. One window: whoever holds the GPU at its last
// instant (the demand then), or, when nobody runs then, whoever ran last. Several: the
// sub-window's mean demand.
double OwnerWeights(const std::vector<SampleEntry>& entries, const std::vector<Actor>& actors,
                    Micros sa, Micros sb, std::int64_t windows, std::vector<double>& weight) {
  weight.assign(entries.size(), 0);
  double total = 0;
  for (Micros to = sb; windows == 1 && total <= 0 && to > sa; to -= kInstantUs) {
    const Micros from = std::max(sa, to - kInstantUs);
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const Actor& act = actors[entries[i].actor];
      if (entries[i].mig >= 0) continue;
      weight[i] = ProfileIntegral(*act.compute, act.seed, from - act.start, to - act.start);
      total += weight[i];
    }
  }
  if (total > 0) return total;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    weight[i] = entries[i].mig >= 0 ? 0 : entries[i].u;
    total += weight[i];
  }
  return total;
}

// One window's `busy` percent-µs to the owner drawn by `weight`, shared with the previous
// window's owner `last` (if still on the GPU) by the two windows' values, as the agent shares
// them; `last` becomes this window's owner.
void GiveOneWindow(std::vector<SampleEntry>& entries, const std::vector<double>& weight,
                   int percent, std::int64_t busy, world::WindowOwner& last, std::mt19937_64& rng) {
  const std::size_t i = std::discrete_distribution<std::size_t>(weight.begin(), weight.end())(rng);
  auto& acc = entries[i].sm_acc;
  const auto q = std::uniform_int_distribution<std::size_t>(0, acc.size() - 1)(rng);
  std::int64_t* previous = nullptr;
  for (SampleEntry& e : entries)
    if (e.actor == last.actor && last.process < static_cast<int>(e.sm_acc.size()))
      previous = &e.sm_acc[static_cast<std::size_t>(last.process)];
  if (previous == nullptr || previous == &acc[q] || last.percent <= 0) {
    acc[q] += busy;
  } else {
    const std::int64_t theirs = busy * last.percent / (last.percent + percent);
    *previous += theirs;
    acc[q] += busy - theirs;
  }
  last = {entries[i].actor, static_cast<int>(q), percent};
}

// `windows` windows of `busy` percent-µs in all, their owners drawn multinomially by `weight`
// (sum `total`): each entry's count given the ones before it, then evenly among its processes.
void GiveManyWindows(std::vector<SampleEntry>& entries, const std::vector<double>& weight,
                     double total, std::int64_t windows, std::int64_t busy, std::mt19937_64& rng) {
  std::int64_t left = windows;
  for (std::size_t i = 0; i < entries.size() && left > 0; ++i) {
    if (weight[i] <= 0) continue;
    const double p = std::min(1.0, weight[i] / total);
    total -= weight[i];
    std::int64_t owned = std::binomial_distribution<std::int64_t>(left, p)(rng);
    left -= owned;
    auto& acc = entries[i].sm_acc;
    for (std::size_t q = 0; q < acc.size() && owned > 0; ++q) {
      const std::int64_t mine = q + 1 == acc.size()
                                    ? owned
                                    : std::binomial_distribution<std::int64_t>(
                                          owned, 1.0 / static_cast<double>(acc.size() - q))(rng);
      owned -= mine;
      acc[q] += busy * mine / windows;
    }
  }
}

}  // namespace

int ObservePercent(double u, std::mt19937_64& rng) {
  double x = 100 * u;
  double d = std::min({2.0, 100 * u, 100 * (1 - u)});
  if (d > 0) x += std::uniform_real_distribution<double>(-d, d)(rng);
  return static_cast<int>(std::clamp(std::llround(x), 0LL, 100LL));
}

void GiveWindowsToOwners(std::vector<SampleEntry>& entries, const std::vector<Actor>& actors,
                         Micros sa, Micros sb, double period_us, int percent,
                         world::WindowOwner& last, std::vector<double>& weight,
                         std::mt19937_64& rng) {
  const Micros len = sb - sa;
  const auto windows =
      std::max<std::int64_t>(1, std::llround(static_cast<double>(len) / std::max(period_us, 1.0)));
  const double total = OwnerWeights(entries, actors, sa, sb, windows, weight);
  const std::int64_t busy = static_cast<std::int64_t>(percent) * len;  // percent-µs
  if (total > 0 && windows == 1) {
    GiveOneWindow(entries, weight, percent, busy, last, rng);
    return;
  }
  last = {};
  if (total > 0) GiveManyWindows(entries, weight, total, windows, busy, rng);
}

}  // namespace gpuledger::sim
