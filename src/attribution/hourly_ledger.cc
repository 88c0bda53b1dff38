#include "attribution/hourly_ledger.h"

#include <cassert>

#include "common/apportion.h"

namespace gpuledger::attribution {

HourlyLedger::HourlyLedger(std::function<ConsumerInfo(const ConsumerRef&)> describe)
    : describe_(std::move(describe)) {}

void HourlyLedger::Add(const NodeContext& node, const std::vector<DeviceUsage>& usage) {
  for (const DeviceUsage& u : usage) {
    const Micros hour = HourStart(u.start_us);
    assert(u.end_us <= hour + kMicrosPerHour);
    const Micros dt = u.duration_us();
    auto [it, inserted] = open_.try_emplace(Key{hour, u.gpu.value});
    DeviceAcc& acc = it->second;
    DeviceHour& d = acc.device;
    if (inserted) {
      d.hour_us = hour;
      d.cluster = node.cluster;
      d.node = node.node;
      d.gpu = u.gpu;
      d.gpu_model = u.model;
      d.sharing = u.sharing;
      d.pricing_class = node.pricing_class;
    }
    d.memory_total_bytes = u.memory_total_bytes;
    d.metered_us += dt;
    d.busy_us += u.busy_us;
    d.idle_us += u.idle_us;
    d.unattributed_us += u.unattributed_us;
    d.unattributed_memory_byte_us += u.unattributed_memory_byte_us;
    d.energy_mj += u.energy_mj;
    d.idle_energy_mj += u.idle_energy_mj;
    d.unattributed_energy_mj += u.unattributed_energy_mj;
    acc.unallocated_ppd_us += static_cast<unsigned __int128>(u.unallocated_ppd) * dt;
    for (const ConsumerUsage& c : u.consumers) {
      auto [cit, fresh] = acc.consumers.try_emplace(c.consumer);
      ConsumerAcc& ca = cit->second;
      UsageRow& r = ca.row;
      if (fresh) {
        r.hour_us = hour;
        r.gpu = u.gpu;
        r.consumer = describe_(c.consumer);
        r.consumer.ref = c.consumer;
        r.node = node.node;
        r.gpu_model = u.model;
        r.sharing = u.sharing;
        r.device_id = c.device_id;
      }
      ca.allocated_ppd_us += static_cast<unsigned __int128>(c.allocated_ppd) * dt;
      r.compute_us += c.compute_us;
      r.memory_byte_us += c.memory_byte_us;
      r.peak_memory_bytes = std::max(r.peak_memory_bytes, c.peak_memory_bytes);
      r.energy_mj += c.energy_mj;
      r.compute_quality = Combine(r.compute_quality, c.compute_quality);
      r.memory_quality = Combine(r.memory_quality, c.memory_quality);
      r.compute_rule = MergeRules(r.compute_rule, c.compute_rule);
    }
  }
}

LedgerHour HourlyLedger::Close(DeviceAcc& acc) const {
  LedgerHour out;
  out.device = acc.device;
  out.device.unmetered_us = std::max<Micros>(0, kMicrosPerHour - out.device.metered_us);
  // Σ ppd-µs == kWholeGpu x metered exactly, so each part is its exact GPU-µs rounded by the
  // largest remainder and the parts sum to the metered time.
  std::vector<std::uint64_t> weights;
  for (auto& [ref, c] : acc.consumers) weights.push_back(static_cast<std::uint64_t>(c.allocated_ppd_us));
  weights.push_back(static_cast<std::uint64_t>(acc.unallocated_ppd_us));
  auto parts = Apportion(out.device.metered_us, weights);
  std::size_t i = 0;
  for (auto& [ref, c] : acc.consumers) {
    c.row.allocated_us = parts[i++];
    out.usage.push_back(std::move(c.row));
  }
  out.device.unallocated_us = parts[i];
  return out;
}

std::vector<LedgerHour> HourlyLedger::TakeHoursBefore(Micros before_us) {
  std::vector<LedgerHour> out;
  for (auto it = open_.begin(); it != open_.end() && std::get<0>(it->first) < before_us;) {
    out.push_back(Close(it->second));
    it = open_.erase(it);
  }
  return out;
}

}  // namespace gpuledger::attribution
