#include "billing/reconciled_prices.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <tuple>

#include "common/apportion.h"

namespace gpuledger::billing {

TimeRange WholeDays(Micros from_us, Micros to_us) {
  TimeRange r{DayStart(from_us), to_us};
  // Round the end up to a day start unless that would overflow (an open-ended range).
  if (to_us <= std::numeric_limits<Micros>::max() - kMicrosPerDay) {
    Micros start = DayStart(to_us);
    r.to_us = start == to_us ? to_us : start + kMicrosPerDay;
  }
  return r;
}

std::vector<Nanos> ScaleToBill(Nanos billed_nanos, std::span<const DeviceHour> node_day) {
  std::vector<std::uint64_t> weights;
  weights.reserve(node_day.size());
  bool any = false;
  for (const DeviceHour& d : node_day) {
    weights.push_back(static_cast<std::uint64_t>(std::max<Nanos>(d.price_nanos, 0)));
    any = any || weights.back() != 0;
  }
  if (!any) {
    for (std::size_t i = 0; i < node_day.size(); ++i) {
      weights[i] = static_cast<std::uint64_t>(std::max<GpuMicros>(node_day[i].metered_us, 0));
      any = any || weights[i] != 0;
    }
  }
  if (!any) std::fill(weights.begin(), weights.end(), 1);
  return Apportion(billed_nanos, weights);  // a net credit splits as its mirror
}

std::vector<DeviceHour> ApplyReconciliations(std::span<const DeviceHour> devices,
                                             std::span<const Reconciliation> reconciliations) {
  std::vector<DeviceHour> out(devices.begin(), devices.end());
  if (reconciliations.empty()) return out;
  using Key = std::tuple<std::string, Micros>;
  std::map<Key, const Reconciliation*> by_node_day;
  for (const Reconciliation& r : reconciliations) by_node_day[Key{r.node, r.day_us}] = &r;

  std::map<Key, std::vector<std::size_t>> groups;  // node-day -> indexes into out, in order
  for (std::size_t i = 0; i < out.size(); ++i) {
    Key key{out[i].node, DayStart(out[i].hour_us)};
    if (by_node_day.contains(key)) groups[key].push_back(i);
  }
  std::vector<DeviceHour> node_day;
  for (const auto& [key, indexes] : groups) {
    node_day.clear();
    for (std::size_t i : indexes) node_day.push_back(out[i]);
    std::vector<Nanos> shares = ScaleToBill(by_node_day.at(key)->billed_nanos, node_day);
    for (std::size_t k = 0; k < indexes.size(); ++k) out[indexes[k]].price_nanos = shares[k];
  }
  return out;
}

}  // namespace gpuledger::billing
