#pragma once
// Cost policies (design section 4): how one device-hour's price is split across its consumers,
// the idle remainder and the unattributed remainder. Always exact: the parts sum to the price.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/units.h"
#include "model/ledger.h"

namespace gpuledger::cost {

enum class PolicyKind { kAllocation, kCompute, kMemory, kHybrid };

struct Policy {
  PolicyKind kind = PolicyKind::kAllocation;
  int alpha_permille = 1000;  // hybrid: weight of allocation, in thousandths (hybrid:0.7 -> 700)
  auto operator<=>(const Policy&) const = default;
};

// "allocation" | "compute" | "memory" | "hybrid:<alpha in [0,1], up to 3 decimals>".
Result<Policy> ParsePolicy(std::string_view text);
std::string ToString(const Policy& policy);

struct IdleHandling {
  enum class Kind { kKeep, kShare, kNamespace };
  Kind kind = Kind::kKeep;
  std::string namespace_name;  // kNamespace: the platform namespace idle cost is charged to
  auto operator<=>(const IdleHandling&) const = default;
};

// "keep" | "share" | "namespace:<ns>".
Result<IdleHandling> ParseIdleHandling(std::string_view text);
std::string ToString(const IdleHandling& idle);

// One device-hour's price split. consumers[i] belongs to usage[i].
// Invariant: Σ consumers + idle + unattributed == device.price_nanos, every policy and handling.
// With kNamespace the idle part stays in `idle`; the report charges it to that namespace.
struct DeviceHourCost {
  std::vector<Nanos> consumers;
  Nanos idle = 0;
  Nanos unattributed = 0;
};

// Weights per policy (the idle bucket is always last in the apportionment):
//   allocation: allocated_us per consumer; idle = unallocated_us; unattributed gets nothing.
//   compute:    compute_us per consumer; unattributed = unattributed_us; idle = idle_us.
//   memory:     memory_kib_s per consumer; unattributed = unattributed_memory_kib_s;
//               idle = MemoryCapacityKibSeconds(memory_total_bytes, metered_us) - used (>= 0).
//               Integer KiB-s weights, used as they are: no scaling or rounding of weights.
//   hybrid:a:   round(a x price) by allocation + the rest by compute, each exact.
// Idle handling share: the idle part is re-apportioned over the consumers by the same weights
// (stays idle when the device had no consumer).
// Electricity: when 0 < device.energy_price_nanos <= price_nanos, that part is apportioned by
// measured energy instead (consumers' energy_mj, unattributed_energy_mj, idle_energy_mj; idle
// handling as above, by energy) and only the rest by the policy.
DeviceHourCost SplitDeviceHour(const DeviceHour& device, std::span<const UsageRow> usage,
                               const Policy& policy, const IdleHandling& idle);

// The four figures of a usage row the split weighs: SplitDeviceHour over these is the split
// over the rows they came from, for readers that keep rows in a compact form of their own.
struct ConsumerWeights {
  GpuMicros allocated_us = 0;
  GpuMicros compute_us = 0;
  KibSeconds memory_kib_s = 0;
  MilliJoules energy_mj = 0;
};
inline ConsumerWeights WeightsOf(const UsageRow& row) {
  return {row.allocated_us, row.compute_us, row.memory_kib_s, row.energy_mj};
}
DeviceHourCost SplitDeviceHour(const DeviceHour& device, std::span<const ConsumerWeights> usage,
                               const Policy& policy, const IdleHandling& idle);

// What a device's memory could have held over its metered time: memory_total_bytes x
// metered_us in KiB-s, rounded to the nearest (half up); 0 for non-positive inputs, INT64_MAX
// past the int64 range. The idle memory-time is this less what consumers and the unattributed
// bucket held.
KibSeconds MemoryCapacityKibSeconds(Bytes memory_total_bytes, GpuMicros metered_us);

// The price of `metered_us` of a device whose hourly price is `hourly_nanos`, rounded to the
// nearest nano (half up). Exact for whole hours.
Nanos PriceForMetered(Nanos hourly_nanos, GpuMicros metered_us);

}  // namespace gpuledger::cost
