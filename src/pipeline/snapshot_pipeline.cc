#include "pipeline/snapshot_pipeline.h"

#include "attribution/attribute.h"
#include "cost/policy.h"

namespace gpuledger::pipeline {

// Hours are written in batches: one transaction per closed hour boundary.
SnapshotPipeline::SnapshotPipeline(store::LedgerStore& store, const cost::Catalog& catalog,
                                   std::function<ConsumerInfo(const ConsumerRef&)> describe,
                                   std::function<NodeFacts(const std::string&)> node_facts)
    : store_(store),
      catalog_(catalog),
      node_facts_(std::move(node_facts)),
      ledger_(std::move(describe)) {}

// Resolved once per (node, model): labels do not change within a run.
const cost::NodePrice& SnapshotPipeline::PriceOf(const std::string& model, const NodeFacts& facts) {
  const std::string key = facts.context.node + "|" + model;
  if (auto it = stats_.node_prices.find(key); it != stats_.node_prices.end()) return it->second;
  return stats_.node_prices.emplace(key, ResolvePrice(catalog_, facts, model)).first->second;
}

cost::NodePrice ResolvePrice(const cost::Catalog& catalog, const NodeFacts& facts,
                             const std::string& model) {
  cost::NodeInfo info;
  info.name = facts.context.node;
  info.labels = facts.labels;
  info.region_hint = facts.region;
  info.pricing_class_hint = facts.context.pricing_class;
  info.gpu_model_hint = model;
  return cost::ResolveNodePrice(catalog, info);
}

void PriceHour(LedgerHour& h, const cost::NodePrice& np, std::set<std::string>* unpriced_models) {
  if (!np.priced) {
    // Degrade, do not fail: the hour is recorded with its usage and no price, and reports
    // list the model as unpriced until the catalog names it.
    h.device.pricing_class = "unpriced";
    h.device.price_nanos = 0;
    h.device.energy_price_nanos = 0;
    if (unpriced_models != nullptr) unpriced_models->insert(h.device.gpu_model);
  } else {
    // The GPU part for the metered time, plus on-prem electricity by the measured energy.
    h.device.pricing_class = np.pricing_class;
    h.device.energy_price_nanos =
        cost::ElectricityPrice(h.device.energy_mj, np.electricity_per_kwh_nanos, np.pue_permille);
    h.device.price_nanos = cost::PriceForMetered(np.gpu_hourly_nanos, h.device.metered_us) +
                           h.device.energy_price_nanos;
  }
}

void PriceHours(std::vector<LedgerHour>& hours, const cost::Catalog& catalog,
                const std::function<NodeFacts(const std::string& node)>& node_facts,
                std::set<std::string>* unpriced_models) {
  std::map<std::pair<std::string, std::string>, cost::NodePrice> prices;
  for (LedgerHour& h : hours) {
    auto key = std::make_pair(h.device.node, h.device.gpu_model);
    auto it = prices.find(key);
    if (it == prices.end())
      it = prices.emplace(key, ResolvePrice(catalog, node_facts(h.device.node), h.device.gpu_model)).first;
    PriceHour(h, it->second, unpriced_models);
  }
}

Status SnapshotPipeline::Add(const NodeSnapshot& snapshot) {
  const Micros hour = HourStart(snapshot.start_us);
  if (hour > open_hour_) {
    if (Status s = Flush(hour); !s.ok()) return s;
    open_hour_ = hour;
  }
  auto fit = facts_cache_.find(snapshot.node);
  if (fit == facts_cache_.end()) fit = facts_cache_.emplace(snapshot.node, node_facts_(snapshot.node)).first;
  const NodeFacts& facts = fit->second;
  auto usage = attribution::Attribute(snapshot);
  for (const DeviceUsage& u : usage) {
    const cost::NodePrice& np = PriceOf(u.model, facts);
    Nanos interval_price =
        np.priced ? cost::PriceForMetered(np.gpu_hourly_nanos, u.duration_us()) : 0;
    for (const ConsumerUsage& c : u.consumers) {
      NaiveTally& t = naive_[c.consumer];
      t.compute_us += u.busy_us;
      t.cost_nanos += interval_price;
    }
  }
  ledger_.Add(facts.context, usage);
  ++stats_.snapshots;
  return Status::Ok();
}

Status SnapshotPipeline::Flush(Micros before_us) {
  std::vector<LedgerHour> hours = ledger_.TakeHoursBefore(before_us);
  if (hours.empty()) return Status::Ok();
  for (LedgerHour& h : hours) {
    const NodeFacts& facts = facts_cache_.at(h.device.node);
    PriceHour(h, PriceOf(h.device.gpu_model, facts), &stats_.unpriced_models);
    stats_.usage_rows += static_cast<std::int64_t>(h.usage.size());
  }
  stats_.device_hours += static_cast<std::int64_t>(hours.size());
  return store_.WriteHours(hours);
}

Status SnapshotPipeline::Finish() { return Flush(INT64_MAX); }

}  // namespace gpuledger::pipeline
