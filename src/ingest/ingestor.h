#pragma once
// The server side of ingestion (design section 7): a CounterLedger whose rows are priced and
// written to a ledger store, with its state kept in the store for restarts. What feeds it:
// scrape_loop.h (agents over HTTP), replay_files.h (`files=DIR`), prometheus_source.h.
//
// Crash safety: each Commit() writes the touched hours first and the engine's state second. A
// crash between the two leaves a state older than the rows; after Restore the same samples are
// fed again from the older last values, and the rows they produce replace the written ones
// with the same figures: no hour lost, none counted twice.
//
// The state is kept in the ledger's meta in parts, "ingest_state/engine",
// "ingest_state/instance/<name>" and "ingest_state/hour/<hour_us>/<gpu>" (CounterLedger::
// PendingState), and a commit writes only the parts that changed, in one transaction so the
// parts always agree. Ledgers written by earlier builds hold the whole state in one key,
// "ingest_state": it is read once and replaced by parts at the first commit (in that same
// transaction). When both exist the single key is the newer (only an earlier build writes it,
// and it ignores the parts), so it wins.
//
// Every key is its cluster's, "cluster/<name>/ingest_state/engine" (ClusterMetaKey): the
// servers of several clusters write one ledger, each resuming its own state (issue 64). Schema
// 15's migration moved an earlier ledger's keys under the cluster its meta names.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "cost/catalog.h"
#include "cost/price_hours.h"
#include "ingest/counter_ledger.h"
#include "ingest/finding_ingest.h"
#include "ingest/token_ledger.h"
#include "store/ledger_store.h"

namespace gpuledger::ingest {

inline constexpr std::string_view kStateMetaKey = "ingest_state";      // earlier builds: whole
inline constexpr std::string_view kStatePartPrefix = "ingest_state/";  // this one: in parts
// The token engine's state (TokenLedger::State): one key, small (engines x models x open hours).
inline constexpr std::string_view kTokenStateMetaKey = "token_state";
// `key` as cluster `cluster`'s ingest keeps it in the ledger's meta: "cluster/<cluster>/<key>".
std::string ClusterMetaKey(std::string_view cluster, std::string_view key);

// Rows the engine produced, priced and written; the engine's state saved beside them.
// `store` and `catalog` must outlive it. Not thread-safe; one owner (the ingest thread).
class Ingestor {
 public:
  Ingestor(store::LedgerStore& store, const cost::Catalog& catalog, std::string cluster,
           std::function<ConsumerInfo(const ConsumerRef&)> describe,
           std::function<cost::NodeFacts(const std::string& node)> node_facts);

  // Restores the engine from the store's state (none: a fresh start). A state this build cannot
  // read is an error naming the meta key (the operator decides; nothing is dropped).
  // `observing_since_us`: when this ledger started to watch (see CounterLedger::ObserveSince);
  // used only on a fresh start, a restored state keeps its own.
  Status Start(Micros observing_since_us = INT64_MAX);
  // The scrape's counters to the engine, its guardrail findings to the findings' history.
  void Feed(const TargetScrape& scrape) {
    ledger_.Feed(scrape);
    findings_.Feed(scrape);
  }
  // An inference engine's scrape: its token counters to the token engine (docs/tokens.md).
  void FeedEngine(const EngineScrape& scrape) { tokens_.Feed(scrape); }
  // Writes every touched hour and token hour, forgets hours older than `keep_open_us` before
  // the newest sample, prunes agents and engines silent for `retention_us`, saves the state
  // parts that changed, and writes the findings that changed (those of agents silent for
  // `retention_us` resolved).
  Status Commit();

  CounterLedger& ledger() { return ledger_; }
  TokenLedger& tokens() { return tokens_; }
  std::int64_t hours_written() const { return hours_written_; }
  std::int64_t state_parts_written() const { return state_parts_written_; }
  std::int64_t token_hours_written() const { return token_hours_written_; }

  Micros keep_open_us = 3 * kMicrosPerHour;
  // Agents (instances) not scraped, and their devices and attribution entries not seen, for
  // this long before the newest sample are dropped from the state (CounterLedger::Prune).
  // Twice the keep-open window: an agent silent for longer can only add to the newest
  // keep-open hours when it comes back, and as a new agent it does nearly that (counted from
  // its start, the older part dropped as late either way); the margin covers a server that was
  // itself down for a while. Memory is then the agents of the last 6 h, whatever the churn.
  // Never less than keep_open_us.
  Micros retention_us = 6 * kMicrosPerHour;
  // Runs on the touched hours before they are priced and written (the Prometheus source fills
  // dcgm-exporter activity there); an error leaves them touched for the next commit.
  std::function<Status(std::vector<LedgerHour>&)> enrich;

 private:
  store::LedgerStore& store_;
  const cost::Catalog& catalog_;
  std::string cluster_;
  std::function<cost::NodeFacts(const std::string&)> node_facts_;
  CounterLedger ledger_;
  FindingIngest findings_;
  TokenLedger tokens_;
  std::string token_state_saved_;  // the token state the ledger holds
  // This cluster's meta keys (ClusterMetaKey): the single state key, the parts' prefix, tokens'.
  std::string state_key_, part_prefix_, token_key_;
  // Writes the touched token hours, forgets and prunes the token engine, and puts its state
  // among `changes` when it changed.
  Status CommitTokens(std::map<std::string, std::optional<std::string>>& changes);
  std::int64_t hours_written_ = 0;
  std::int64_t state_parts_written_ = 0;
  std::int64_t token_hours_written_ = 0;
  // Migrating from the single key: erased, with every stored part not rewritten, at the first
  // commit.
  bool migrate_ = false;
  std::vector<std::string> stale_parts_;
};

}  // namespace gpuledger::ingest
