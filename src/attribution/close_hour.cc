#include "attribution/close_hour.h"

#include <algorithm>
#include <cstdint>

#include "common/apportion.h"

namespace gpuledger::attribution {
namespace {

std::uint64_t W(std::int64_t x) { return x > 0 ? static_cast<std::uint64_t>(x) : 0; }

}  // namespace

LedgerHour CloseDeviceHour(OpenDeviceHour open) {
  LedgerHour out;
  DeviceHour& d = out.device;
  d = std::move(open.device);
  out.usage = std::move(open.usage);
  d.metered_us = std::clamp<GpuMicros>(d.metered_us, 0, kMicrosPerHour);
  d.unmetered_us = kMicrosPerHour - d.metered_us;
  {
    const std::uint64_t w[] = {W(d.busy_us), W(d.idle_us)};
    auto p = Apportion(d.metered_us, w);
    d.busy_us = p[0];
    d.idle_us = p[1];
  }
  std::vector<std::uint64_t> compute_w, alloc_w, energy_w;
  GpuMicros allocated = 0;
  MilliJoules consumer_energy = 0;
  for (const UsageRow& r : out.usage) {
    compute_w.push_back(W(r.compute_us));
    alloc_w.push_back(W(r.allocated_us));
    energy_w.push_back(W(r.energy_mj));
    allocated += std::max<GpuMicros>(0, r.allocated_us);
    consumer_energy += std::max<MilliJoules>(0, r.energy_mj);
  }
  compute_w.push_back(W(d.unattributed_us));
  auto compute = Apportion(d.busy_us, compute_w);
  d.unattributed_us = compute.back();
  // Unallocated is what the grants left of the metered time.
  alloc_w.push_back(W(d.metered_us - allocated));
  auto alloc = Apportion(d.metered_us, alloc_w);
  d.unallocated_us = alloc.back();
  // Energy the consumers' shares do not explain is split between unattributed and idle by
  // their time, as attribution splits each interval's.
  d.energy_mj = std::max<MilliJoules>(0, d.energy_mj);
  const MilliJoules rest = std::max<MilliJoules>(0, d.energy_mj - consumer_energy);
  {
    const std::uint64_t w[] = {W(d.unattributed_us), W(d.idle_us)};
    auto split = Apportion(rest, w);
    energy_w.push_back(W(split[0]));
    energy_w.push_back(W(split[1]));
  }
  auto energy = Apportion(d.energy_mj, energy_w);
  d.idle_energy_mj = energy.back();
  d.unattributed_energy_mj = energy[energy.size() - 2];
  for (std::size_t i = 0; i < out.usage.size(); ++i) {
    UsageRow& r = out.usage[i];
    r.hour_us = d.hour_us;
    r.gpu = d.gpu;
    r.allocated_us = alloc[i];
    r.compute_us = compute[i];
    r.energy_mj = energy[i];
    r.memory_kib_s = std::max<KibSeconds>(0, r.memory_kib_s);
    // Activity is in no identity (an SM can be active without NVML counting a kernel, and the
    // other way round): it passes through, like memory-time, never negative.
    for (GpuMicros* a : {&r.activity.sm_active_us, &r.activity.sm_occupancy_us,
                         &r.activity.tensor_active_us, &r.activity.dram_active_us})
      *a = std::max<GpuMicros>(0, *a);
  }
  d.unattributed_memory_kib_s = std::max<KibSeconds>(0, d.unattributed_memory_kib_s);
  return out;
}

}  // namespace gpuledger::attribution
