#include "ledger/devices.h"

#include <algorithm>
#include <map>
#include <string>

namespace gpuledger::ledger {
namespace {

// One placement's sums over the window, and where it was first seen.
struct PlacementSums {
  std::size_t first_device = SIZE_MAX;  // index of its first device-hour; SIZE_MAX: none
  DeviceSummary sums;
};

// Adds a device-hour's (DeviceFigures) or a placement's (DeviceSummary) times, energy and cost.
template <typename Figures>
void AddTo(DeviceSummary& a, const Figures& f, Nanos cost) {
  a.metered_us += f.metered_us;
  a.unmetered_us += f.unmetered_us;
  a.busy_us += f.busy_us;
  a.idle_us += f.idle_us;
  a.unattributed_us += f.unattributed_us;
  a.unallocated_us += f.unallocated_us;
  a.energy_mj += f.energy_mj;
  a.cost_nanos += cost;
}

}  // namespace

// Summed by placement index first (an array: a device-hour costs no lookup by string), then
// the placements of one GPU merged in UUID order; a GPU takes the placement and memory of its
// earliest device-hour in the window.
std::vector<DeviceSummary> SummarizeDevices(const Snapshot& s, const TimeRange& window) {
  std::vector<PlacementSums> by_placement(s.placements().size());
  const auto [first, last] = s.DeviceRange(window.from_us, window.to_us);
  for (std::size_t d = first; d < last; ++d) {
    const DeviceFigures f = s.devices()[d];
    PlacementSums& p = by_placement[f.placement];
    DeviceSummary& a = p.sums;
    if (p.first_device == SIZE_MAX) {
      p.first_device = d;
      a.memory_total_bytes = f.memory_total_bytes;
    }
    AddTo(a, f, f.price_nanos);
  }
  struct GpuSums {
    std::size_t earliest = SIZE_MAX;
    DeviceSummary sums;
    std::vector<std::pair<std::size_t, const std::string*>> layouts;  // first device, layout
  };
  std::map<std::string, GpuSums> by_gpu;
  for (std::size_t i = 0; i < by_placement.size(); ++i) {
    const PlacementSums& p = by_placement[i];
    if (p.first_device == SIZE_MAX) continue;
    const Placement& placement = s.placements()[i];
    GpuSums& g = by_gpu[placement.gpu.value];
    if (p.first_device < g.earliest) {
      g.earliest = p.first_device;
      g.sums.placement = placement;
      g.sums.memory_total_bytes = p.sums.memory_total_bytes;
    }
    g.layouts.emplace_back(p.first_device, &placement.layout);
    AddTo(g.sums, p.sums, p.sums.cost_nanos);
  }
  std::vector<DeviceSummary> out;
  out.reserve(by_gpu.size());
  for (auto& [gpu, g] : by_gpu) {
    std::sort(g.layouts.begin(), g.layouts.end());
    for (const auto& [device, layout] : g.layouts)
      if (std::find(g.sums.layouts.begin(), g.sums.layouts.end(), *layout) == g.sums.layouts.end())
        g.sums.layouts.push_back(*layout);
    out.push_back(std::move(g.sums));
  }
  return out;
}

}  // namespace gpuledger::ledger
