// The conservation laws every device-interval's attribution must keep (CheckConservation).
#include <fmt/format.h>

#include "attribution/attribute.h"

namespace gpuledger::attribution {

Status CheckConservation(const DeviceUsage& u) {
  const Micros dt = u.duration_us();
  GpuMicros compute = 0;
  SharePpd allocated = 0;
  MilliJoules energy = 0;
  for (const auto& c : u.consumers) {
    if (c.compute_us < 0 || c.allocated_ppd < 0 || c.energy_mj < 0)
      return Internal(fmt::format("{}: negative figure for {}", u.gpu.value, c.consumer.Key()));
    compute += c.compute_us;
    allocated += c.allocated_ppd;
    energy += c.energy_mj;
  }
  if (u.busy_us + u.idle_us != dt || u.idle_us < 0)
    return Internal(
        fmt::format("{}: busy {} + idle {} != interval {}", u.gpu.value, u.busy_us, u.idle_us, dt));
  if (compute + u.unattributed_us != u.busy_us)
    return Internal(fmt::format("{}: consumers {} + unattributed {} != busy {}", u.gpu.value,
                                compute, u.unattributed_us, u.busy_us));
  if (allocated + u.unallocated_ppd != kWholeGpu || u.unallocated_ppd < 0)
    return Internal(fmt::format("{}: allocated {} + unallocated {} != whole GPU", u.gpu.value,
                                allocated, u.unallocated_ppd));
  if (u.energy_mj != 0 && energy + u.unattributed_energy_mj + u.idle_energy_mj != u.energy_mj)
    return Internal(fmt::format("{}: energy not conserved", u.gpu.value));
  return Status::Ok();
}

}  // namespace gpuledger::attribution
