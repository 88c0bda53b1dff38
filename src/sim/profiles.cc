#include "sim/profiles.h"

#include <algorithm>

#include "sim/sim_util.h"

namespace gpuledger::sim {
namespace {

// ∫ of a series over [t0, t1): its values held until the next offset, repeating every period.
double SeriesIntegral(const Series& s, Micros t0, Micros t1) {
  auto f = [&](Micros t) {
    Micros q = t / s.period_us, r = t % s.period_us;
    auto it = std::upper_bound(s.offset_us.begin(), s.offset_us.end(), r);
    std::size_t i = static_cast<std::size_t>(it - s.offset_us.begin()) - 1;
    return static_cast<double>(q) * s.prefix.back() + s.prefix[i] +
           s.value[i] * static_cast<double>(r - s.offset_us[i]);
  };
  return f(t1) - f(t0);
}

// The series' value held at `t`.
double SeriesAt(const Series& s, Micros t) {
  const Micros r = t % s.period_us;
  auto it = std::upper_bound(s.offset_us.begin(), s.offset_us.end(), r);
  return s.value[static_cast<std::size_t>(it - s.offset_us.begin()) - 1];
}

}  // namespace

// ∫ of the profile's demand (fraction x µs) over [t0, t1), times relative to the actor's start.
double ProfileIntegral(const ComputeProfile& c, std::uint64_t seed, Micros t0, Micros t1) {
  switch (c.kind) {
    case ProfileKind::kIdle:
      return 0;
    case ProfileKind::kConstant:
      return c.duty * static_cast<double>(t1 - t0);
    case ProfileKind::kPeriodic: {
      auto f = [&](Micros t) {
        Micros q = t / c.period_us, r = t % c.period_us;
        return c.duty * static_cast<double>(q * c.on_us + std::min(r, c.on_us));
      };
      return f(t1) - f(t0);
    }
    case ProfileKind::kBursty: {
      // Slots of burst_us, each on or off at random (hash of seed and slot, so any window can
      // be integrated without replaying the past). Mean level == mean_duty.
      double p_on = c.duty <= 0.5 ? 0.5 : c.duty;
      double level = c.duty <= 0.5 ? 2 * c.duty : 1.0;
      double sum = 0;
      for (Micros k = t0 / c.burst_us; k * c.burst_us < t1; ++k) {
        Micros a = std::max(t0, k * c.burst_us), b = std::min(t1, (k + 1) * c.burst_us);
        std::uint64_t h =
            SplitMix64(seed ^ (static_cast<std::uint64_t>(k) * 0x9e3779b97f4a7c15ULL));
        double x = static_cast<double>(h >> 11) * 0x1.0p-53;
        if (x < p_on) sum += level * static_cast<double>(b - a);
      }
      return sum;
    }
    case ProfileKind::kSeries:
      return SeriesIntegral(*c.series, t0, t1);
  }
  return 0;
}

// ∫ memory (bytes x µs) over [t0, t1), relative to the actor's start.
double MemoryIntegral(const MemoryProfile& m, Micros t0, Micros t1) {
  if (m.series) return SeriesIntegral(*m.series, t0, t1);
  if (m.peak_bytes == 0 || m.period_us <= 0) return static_cast<double>(m.bytes) * (t1 - t0);
  double rise = static_cast<double>(m.peak_bytes - m.bytes);
  double p = static_cast<double>(m.period_us);
  auto f = [&](Micros t) {
    const Micros whole_periods = t / m.period_us;  // floor: the rises completed before t
    double q = static_cast<double>(whole_periods), r = static_cast<double>(t % m.period_us);
    return static_cast<double>(m.bytes) * static_cast<double>(t) +
           rise * (q * p / 2 + r * r / (2 * p));
  };
  return f(t1) - f(t0);
}

// Memory held at `t` (relative to the actor's start): the sawtooth's value, not an average.
double MemoryAt(const MemoryProfile& m, Micros t) {
  if (m.series) return SeriesAt(*m.series, t);
  if (m.peak_bytes == 0 || m.period_us <= 0) return static_cast<double>(m.bytes);
  double r = static_cast<double>(t % m.period_us) / static_cast<double>(m.period_us);
  return static_cast<double>(m.bytes) + static_cast<double>(m.peak_bytes - m.bytes) * r;
}

}  // namespace gpuledger::sim
