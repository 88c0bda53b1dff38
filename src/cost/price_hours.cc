#include "cost/price_hours.h"

#include "cost/policy.h"

namespace gpuledger::cost {

NodePrice ResolvePrice(const Catalog& catalog, const NodeFacts& facts, const std::string& model) {
  NodeInfo info;
  info.name = facts.node;
  info.labels = facts.labels;
  info.region_hint = facts.region_hint;
  info.pricing_class_hint = facts.pricing_class_hint;
  info.gpu_model_hint = model;
  return ResolveNodePrice(catalog, info);
}

void PriceHour(LedgerHour& h, const NodePrice& np) {
  DeviceHour& d = h.device;
  if (!np.priced) {
    d.price_state = PriceState::kUnpriced;
    d.pricing_class = np.pricing_class;
    d.price_nanos = 0;
    d.energy_price_nanos = 0;
    return;
  }
  d.price_state = PriceState::kPriced;
  d.pricing_class = np.pricing_class;
  d.energy_price_nanos =
      ElectricityPrice(d.energy_mj, np.electricity_per_kwh_nanos, np.pue_permille);
  d.price_nanos = PriceForMetered(np.gpu_hourly_nanos, d.metered_us) + d.energy_price_nanos;
}

void PriceHours(std::vector<LedgerHour>& hours, const Catalog& catalog,
                const std::function<NodeFacts(const std::string& node)>& node_facts) {
  std::map<std::pair<std::string, std::string>, NodePrice> prices;
  for (LedgerHour& h : hours) {
    auto key = std::make_pair(h.device.node, h.device.gpu_model);
    auto it = prices.find(key);
    if (it == prices.end())
      it = prices.emplace(key, ResolvePrice(catalog, node_facts(h.device.node), h.device.gpu_model))
               .first;
    PriceHour(h, it->second);
  }
}

}  // namespace gpuledger::cost
