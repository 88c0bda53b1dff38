#pragma once
// Snapshots to ledger: attribute each NodeSnapshot, roll the intervals into hours, price each
// closed device-hour from the catalog and write it to the store. The demo drives it from the
// simulator; replaying snapshot files will drive it the same way.
//
// It also tallies what the naive "device value copied to every pod on it" method would report
// (what dcgm-exporter's per-device series joined to pods gives), for contrast.

#include <functional>
#include <map>
#include <set>
#include <string>

#include "attribution/hourly_ledger.h"
#include "common/result.h"
#include "cost/catalog.h"
#include "cost/node_pricing.h"
#include "model/snapshot.h"
#include "store/ledger_store.h"

namespace gpuledger::pipeline {

// What the pipeline knows of a node. Prices come from cost::ResolveNodePrice over the labels;
// context.pricing_class and region are the fallbacks when no label says.
struct NodeFacts {
  attribution::NodeContext context;
  std::string region;
  std::map<std::string, std::string> labels;
};

struct NaiveTally {
  GpuMicros compute_us = 0;   // the device's busy time, copied to each pod on it
  Nanos cost_nanos = 0;       // the whole device's price while the pod held or used it
};

struct PipelineStats {
  std::int64_t snapshots = 0;
  std::int64_t device_hours = 0;
  std::int64_t usage_rows = 0;
  std::set<std::string> unpriced_models;
  std::map<std::string, cost::NodePrice> node_prices;  // "node|model" -> how it was priced
};

// How the pipeline prices `model` GPUs on a node: cost::ResolveNodePrice over the node's facts.
cost::NodePrice ResolvePrice(const cost::Catalog& catalog, const NodeFacts& facts,
                             const std::string& model);

// Prices one closed device-hour as the pipeline does: the GPU part for the metered time plus
// on-prem electricity by measured energy; an unpriced model degrades to pricing_class
// "unpriced" with price 0 (added to `unpriced_models` when given).
void PriceHour(LedgerHour& hour, const cost::NodePrice& price,
               std::set<std::string>* unpriced_models = nullptr);

// PriceHour over `hours`, resolving each (node, model) once through `node_facts`. For other
// ingestion paths (ingest::CounterLedger's rows).
void PriceHours(std::vector<LedgerHour>& hours, const cost::Catalog& catalog,
                const std::function<NodeFacts(const std::string& node)>& node_facts,
                std::set<std::string>* unpriced_models = nullptr);

class SnapshotPipeline {
 public:
  // `store` and `catalog` must outlive the pipeline.
  SnapshotPipeline(store::LedgerStore& store, const cost::Catalog& catalog,
                   std::function<ConsumerInfo(const ConsumerRef&)> describe,
                   std::function<NodeFacts(const std::string& node)> node_facts);

  // Snapshots must come in time order per node and never cross an hour boundary. Hours that
  // closed before this snapshot's hour are priced and written.
  Status Add(const NodeSnapshot& snapshot);
  // Writes every hour still open.
  Status Finish();

  const PipelineStats& stats() const { return stats_; }
  const std::map<ConsumerRef, NaiveTally>& naive() const { return naive_; }

 private:
  Status Flush(Micros before_us);
  const cost::NodePrice& PriceOf(const std::string& model, const NodeFacts& facts);

  store::LedgerStore& store_;
  const cost::Catalog& catalog_;
  std::function<NodeFacts(const std::string&)> node_facts_;
  attribution::HourlyLedger ledger_;
  std::map<std::string, NodeFacts> facts_cache_;
  std::map<ConsumerRef, NaiveTally> naive_;
  Micros open_hour_ = INT64_MIN;
  PipelineStats stats_;
};

}  // namespace gpuledger::pipeline
