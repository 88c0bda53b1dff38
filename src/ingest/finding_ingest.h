#pragma once
// The agents' guardrail findings into the ledger (design section 5): each scrape's
// gpuledger_finding_* series (agent/collector.cc) become Finding rows, upserted by identity
// (cluster, node, kind, subject, device, first seen), with their last sight and, once the
// agent says so or stops listing them, their resolution. History is kept: a finding that
// resolves and comes back is a new row.
//
// A finding the agent stops listing without a resolution (the agent restarted and lost it, or
// its condition ended more than the agent's series TTL before this scrape) is resolved at its
// last sight. The findings of a node not scraped for `retention_us` are resolved the same way,
// so the open set is what the live agents show: memory is bounded by it.
// Not thread-safe; the ingest thread owns it.

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "common/result.h"
#include "ingest/sample.h"
#include "model/finding.h"
#include "store/ledger_store.h"

namespace gpuledger::ingest {

// The agent's finding families FindingIngest reads (what PromQL ingestion also queries).
const std::vector<std::string>& FindingSeriesNames();

class FindingIngest {
 public:
  explicit FindingIngest(std::string cluster) : cluster_(std::move(cluster)) {}

  // Loads the open findings of `cluster_` from the store (after a server restart).
  Status Restore(store::LedgerStore& store);
  void Feed(const TargetScrape& scrape);
  // Resolves open findings of nodes last scraped before `before_us`.
  void Prune(Micros before_us);
  // Findings changed since the last successful Commit.
  Status Commit(store::LedgerStore& store);

  std::size_t open_findings() const;

 private:
  // A finding as the agent names it: its series' labels.
  using SeriesKey = std::tuple<FindingKind, std::string, std::string, std::string, std::string>;
  struct NodeState {
    Micros last_scrape_us = 0;
    std::map<SeriesKey, Finding> open;
  };

  void Changed(const Finding& f) { pending_[f.Key()] = f; }

  std::string cluster_;
  std::map<std::string, NodeState> nodes_;
  std::map<Finding::KeyType, Finding> pending_;
};

}  // namespace gpuledger::ingest
