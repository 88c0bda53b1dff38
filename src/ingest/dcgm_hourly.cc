#include "ingest/dcgm_hourly.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "common/apportion.h"

namespace gpuledger::ingest {
namespace {

GpuMicros Scaled(const std::optional<double>& fraction, GpuMicros metered_us) {
  if (!fraction || !std::isfinite(*fraction)) return 0;
  return static_cast<GpuMicros>(
      std::llround(std::clamp(*fraction, 0.0, 1.0) * static_cast<double>(metered_us)));
}

}  // namespace

int FillActivityFromDcgmHourly(LedgerHour& hour, const DcgmHourlyFractions& fractions) {
  if (hour.device.sharing == SharingMode::kMig) return 0;
  const GpuMicros metered = std::max<GpuMicros>(0, hour.device.metered_us);
  if (metered == 0) return 0;
  if (!fractions.sm_active && !fractions.sm_occupancy && !fractions.tensor_active &&
      !fractions.dram_active)
    return 0;
  std::vector<UsageRow*> present;
  for (UsageRow& r : hour.usage) {
    if (r.activity_quality != Quality::kNone) return 0;  // the agent's own figures win
    if (r.compute_us > 0) present.push_back(&r);
  }
  if (present.empty()) return 0;
  std::vector<std::uint64_t> weights;
  weights.reserve(present.size());
  for (const UsageRow* r : present) weights.push_back(static_cast<std::uint64_t>(r->compute_us));
  auto split = [&](const std::optional<double>& fraction, GpuMicros Activity::*field) {
    auto parts = Apportion(Scaled(fraction, metered), weights);
    for (std::size_t i = 0; i < present.size(); ++i) present[i]->activity.*field = parts[i];
  };
  split(fractions.sm_active, &Activity::sm_active_us);
  split(fractions.sm_occupancy, &Activity::sm_occupancy_us);
  split(fractions.tensor_active, &Activity::tensor_active_us);
  split(fractions.dram_active, &Activity::dram_active_us);
  for (UsageRow* r : present) {
    r->activity_quality = Quality::kEstimated;
    r->activity_rule = std::string(present.size() == 1 ? kDcgmHourlyRule : kDcgmHourlyShareRule);
  }
  return static_cast<int>(present.size());
}

}  // namespace gpuledger::ingest
