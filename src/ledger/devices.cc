#include "ledger/devices.h"

#include <map>
#include <string>

namespace gpuledger::ledger {

std::vector<DeviceSummary> SummarizeDevices(const Snapshot& s, const TimeRange& window) {
  std::map<std::string, DeviceSummary> by_gpu;
  const auto [first, last] = s.DeviceRange(window.from_us, window.to_us);
  for (std::size_t d = first; d < last; ++d) {
    const DeviceFigures& f = s.devices()[d];
    const Placement& p = s.placements()[f.placement];
    auto [it, fresh] = by_gpu.try_emplace(p.gpu.value);
    DeviceSummary& a = it->second;
    if (fresh) {
      a.placement = p;
      a.memory_total_bytes = f.memory_total_bytes;
    }
    a.metered_us += f.metered_us;
    a.unmetered_us += f.unmetered_us;
    a.busy_us += f.busy_us;
    a.idle_us += f.idle_us;
    a.unattributed_us += f.unattributed_us;
    a.unallocated_us += f.unallocated_us;
    a.energy_mj += f.energy_mj;
    a.cost_nanos += f.price_nanos;
  }
  std::vector<DeviceSummary> out;
  out.reserve(by_gpu.size());
  for (auto& [gpu, summary] : by_gpu) out.push_back(std::move(summary));
  return out;
}

}  // namespace gpuledger::ledger
