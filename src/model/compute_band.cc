#include "model/compute_band.h"

#include <algorithm>

namespace gpuledger {

std::optional<double> MeasuredComputeBand(std::string_view rule) {
  // Zero by construction: nothing ran, or the MPS server whose samples go to its clients.
  if (rule == "device-idle" || rule == "no-process" || rule == "mps-server") return 0.0;
  // One consumer takes the device's busy time: run 2, 31.28 s against 31.37 s of counted work.
  if (rule == "device-activity") return 0.003;
  // Several time-sliced consumers: the device's windows split by presence (the agent's
  // sources/nvml/presence_split.h), worst of runs 1-4: run 1's +111% against its workers'
  // CUDA-event time (runs 2-4, whose truth was counted: 43% at worst).
  if (rule == "process-samples") return 1.11;
  // Busy time by the processes' own kernel time (issue 31): run 4 split the device's busy time
  // by CUPTI kernel records within +1.4% / +1.3% / -0.9% of the counted truth (README item 4).
  if (rule == "kernel-time") return 0.014;
  // MPS clients: NVML samples only the server; run1-mps's split was -60% / +27%.
  if (rule == "mps-thread-share" || rule == "mps-memory-share" || rule == "mps-even-share")
    return 0.60;
  return std::nullopt;
}

std::optional<double> MeasuredComputeBandOfRules(std::string_view rules) {
  double widest = 0;
  bool any = false;
  while (!rules.empty()) {
    const auto plus = rules.find('+');
    const std::string_view rule = rules.substr(0, plus);
    rules = plus == std::string_view::npos ? std::string_view{} : rules.substr(plus + 1);
    if (rule.empty()) continue;
    auto band = MeasuredComputeBand(rule);
    if (!band) return std::nullopt;
    widest = std::max(widest, *band);
    any = true;
  }
  if (!any) return std::nullopt;
  return widest;
}

GpuMicros ComputeFloor(GpuMicros compute, Quality quality, std::optional<double> band) {
  if (quality == Quality::kMeasured || quality == Quality::kNone) return compute;
  if (quality != Quality::kEstimated || !band || compute <= 0) return 0;
  return static_cast<GpuMicros>(static_cast<double>(compute) / (1.0 + *band));
}

}  // namespace gpuledger
