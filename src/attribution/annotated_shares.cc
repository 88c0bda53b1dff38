#include "attribution/annotated_shares.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "common/apportion.h"

namespace gpuledger::attribution {
namespace {

// The declared fraction of the GPU, and which annotation declared it.
std::optional<std::pair<double, std::string_view>> Declared(const UsageRow& row,
                                                            Bytes device_memory) {
  // Within [0, 1] whatever a pod's annotation said (a NaN is no declaration): the fraction
  // becomes µs by rounding, and a negative or unbounded one would wrap there.
  auto share = [](double f) -> std::optional<double> {
    if (std::isnan(f)) return std::nullopt;
    return std::clamp(f, 0.0, 1.0);
  };
  std::optional<double> f;
  std::string_view source;
  if (row.consumer.annotated_gpu_fraction) {
    f = share(*row.consumer.annotated_gpu_fraction);
    source = "annotation:gpu-fraction";
  } else if (row.consumer.annotated_gpu_memory_bytes && device_memory > 0) {
    f = share(static_cast<double>(*row.consumer.annotated_gpu_memory_bytes) /
              static_cast<double>(device_memory));
    source = "annotation:gpu-memory";
  }
  if (!f) return std::nullopt;
  return std::pair{*f, source};
}

}  // namespace

void ApplyAnnotatedShares(LedgerHour& hour) {
  DeviceHour& d = hour.device;
  std::vector<UsageRow*> reservations, annotated;
  std::vector<std::string_view> sources;
  std::vector<double> fractions;
  GpuMicros reserved = 0;
  for (UsageRow& r : hour.usage) {
    if (r.consumer.ref.namespace_name == kKaiReservationNamespace && r.allocated_us > 0) {
      reservations.push_back(&r);
      reserved += r.allocated_us;
      continue;
    }
    if (r.allocated_us != 0 || (r.compute_us <= 0 && r.memory_kib_s <= 0)) continue;
    if (auto declared = Declared(r, d.memory_total_bytes)) {
      annotated.push_back(&r);
      fractions.push_back(declared->first);
      sources.push_back(declared->second);
    }
  }
  if (annotated.empty()) return;
  const bool from_reservation = reserved > 0;
  const GpuMicros base = from_reservation ? reserved : d.metered_us;
  const GpuMicros pool = from_reservation ? reserved : d.unallocated_us;
  std::vector<std::uint64_t> wants;
  GpuMicros wanted = 0;
  for (double f : fractions) {
    wants.push_back(static_cast<std::uint64_t>(std::llround(f * static_cast<double>(base))));
    wanted += static_cast<GpuMicros>(wants.back());
  }
  std::vector<GpuMicros> given;
  if (wanted > pool) {
    wants.push_back(0);
    given = Apportion(pool, wants);
    wanted = pool;
  } else {
    given.assign(wants.begin(), wants.end());
  }
  for (std::size_t i = 0; i < annotated.size(); ++i) {
    annotated[i]->allocated_us = given[i];
    annotated[i]->share_source = std::string(sources[i]);
  }
  if (!from_reservation) {
    d.unallocated_us -= wanted;
    return;
  }
  // Taken from the reservation pods in proportion to what each held, exactly.
  std::vector<std::uint64_t> held;
  held.reserve(reservations.size() + 1);
  for (const UsageRow* r : reservations)
    held.push_back(static_cast<std::uint64_t>(r->allocated_us));
  held.push_back(0);
  auto taken = Apportion(wanted, held);
  for (std::size_t i = 0; i < reservations.size(); ++i) reservations[i]->allocated_us -= taken[i];
}

}  // namespace gpuledger::attribution
