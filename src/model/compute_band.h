#pragma once
// How far off each compute rule (ConsumerUsage::compute_rule) was measured to be on real
// hardware, so that a per-container compute figure carries its error band. From the H200
// captures (../shared/data/h200; docs/attribution.md, "What NVML can and cannot tell"): the
// worst relative error of a consumer's compute against its true GPU time.

#include <optional>
#include <string_view>

#include "common/units.h"
#include "model/sharing.h"

namespace gpuledger {

// The band of one rule; nullopt where it was not measured on real hardware (MIG rules, the
// allocation fallback) or is not a measurement (a grant alone).
std::optional<double> MeasuredComputeBand(std::string_view rule);

// The widest band of "+"-joined rules ("device-idle+process-samples"); nullopt when any rule
// that contributed time has no measured band.
std::optional<double> MeasuredComputeBandOfRules(std::string_view rules);

// The least GPU time a row's consumer can have used, from its compute figure, that figure's
// quality and its rules' band (MeasuredComputeBandOfRules): the figure when measured; an
// estimate off by up to b is at least figure / (1 + b) of the truth; 0 where nothing bounds it
// (rules never measured, a grant alone). Summed over rows, a group's floor whatever its mix.
GpuMicros ComputeFloor(GpuMicros compute, Quality quality, std::optional<double> band);

}  // namespace gpuledger
