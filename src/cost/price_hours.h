#pragma once
// Prices closed device-hours (design section 4): the GPU part of the node's price for the
// metered time, plus on-prem electricity by the measured energy. Every ingestion path prices
// its rows here. Pure: the node's facts come in, nothing is looked up.

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cost/catalog.h"
#include "cost/node_pricing.h"
#include "model/ledger.h"

namespace gpuledger::cost {

// What is known of a node when its hours are priced: its labels (from the API server), and
// fallbacks for when no label says (a configured region and class).
struct NodeFacts {
  std::string node;
  std::map<std::string, std::string> labels;
  std::string region_hint;
  std::string pricing_class_hint;
};

// How `model` GPUs on the node are priced: ResolveNodePrice over the facts.
NodePrice ResolvePrice(const Catalog& catalog, const NodeFacts& facts, const std::string& model);

// Prices one device-hour. An unpriced model degrades, never fails: the hour keeps its usage,
// price 0 and PriceState::kUnpriced (reports list the model until the catalog names it).
void PriceHour(LedgerHour& hour, const NodePrice& price);

// PriceHour over `hours`, resolving each (node, model) once through `node_facts`.
void PriceHours(std::vector<LedgerHour>& hours, const Catalog& catalog,
                const std::function<NodeFacts(const std::string& node)>& node_facts);

}  // namespace gpuledger::cost
