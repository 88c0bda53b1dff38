#include "ingest/ingestor.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace gpuledger::ingest {

Ingestor::Ingestor(store::LedgerStore& store, const cost::Catalog& catalog, std::string cluster,
                   std::function<ConsumerInfo(const ConsumerRef&)> describe,
                   std::function<cost::NodeFacts(const std::string& node)> node_facts)
    : store_(store),
      catalog_(catalog),
      cluster_(cluster),
      node_facts_(std::move(node_facts)),
      ledger_(cluster, std::move(describe)),
      findings_(cluster),
      tokens_(cluster),
      state_key_(ClusterMetaKey(cluster, kStateMetaKey)),
      part_prefix_(ClusterMetaKey(cluster, kStatePartPrefix)),
      token_key_(ClusterMetaKey(cluster, kTokenStateMetaKey)) {}

std::string ClusterMetaKey(std::string_view cluster, std::string_view key) {
  return fmt::format("cluster/{}/{}", cluster, key);
}

Status Ingestor::Start(Micros observing_since_us) {
  if (Status s = findings_.Restore(store_); !s.ok()) return s;
  auto meta = store_.ReadMeta();
  if (!meta) return meta.error();
  if (auto it = meta->find(token_key_); it != meta->end()) {
    if (Status s = tokens_.Restore(it->second); !s.ok())
      return InvalidArgument(fmt::format("ledger meta '{}': {}", token_key_, s.error().message));
    token_state_saved_ = it->second;
  } else {
    tokens_.ObserveSince(observing_since_us);
  }
  std::map<std::string, std::string> parts;
  for (const auto& [key, value] : *meta)
    if (key.starts_with(part_prefix_)) parts.emplace(key.substr(part_prefix_.size()), value);
  if (auto it = meta->find(state_key_); it != meta->end()) {
    // The single key of an earlier build: newer than any parts (see the header). It moves to
    // parts at the first commit, which erases it and every part it does not rewrite.
    Status s = ledger_.Restore(it->second);
    if (!s.ok())
      return InvalidArgument(fmt::format("ledger meta '{}': {}", state_key_, s.error().message));
    migrate_ = true;
    for (const auto& [part, value] : parts) stale_parts_.push_back(part);
    return Status::Ok();
  }
  if (parts.empty()) {
    ledger_.ObserveSince(observing_since_us);
    return Status::Ok();
  }
  // The message names the part as "'cluster/<name>/ingest_state/<part>': ...".
  if (Status s = ledger_.RestoreParts(parts, part_prefix_); !s.ok())
    return InvalidArgument(fmt::format("ledger meta {}", s.error().message));
  return Status::Ok();
}

Status Ingestor::Commit() {
  std::vector<LedgerHour> hours = ledger_.TakeTouched();
  if (!hours.empty()) {
    if (enrich) {
      if (Status s = enrich(hours); !s.ok()) {
        ledger_.Retouch(hours);
        return s;
      }
    }
    cost::PriceHours(hours, catalog_, node_facts_);
    if (Status s = store_.WriteHours(hours); !s.ok()) {
      ledger_.Retouch(hours);  // written at the next commit
      return s;
    }
    hours_written_ += static_cast<std::int64_t>(hours.size());
  }
  if (ledger_.latest_us() != INT64_MIN) {
    ledger_.Forget(ledger_.latest_us() - keep_open_us);
    ledger_.Prune(ledger_.latest_us() - std::max(retention_us, keep_open_us));
    findings_.Prune(ledger_.latest_us() - std::max(retention_us, keep_open_us));
  }
  // Findings do not wait on the engine's state: their rows are their own state (idempotent).
  if (Status s = findings_.Commit(store_); !s.ok()) return s;
  // Rows first, state second (see the header); only the parts that changed, in one transaction.
  std::map<std::string, std::optional<std::string>> changes;
  if (Status s = CommitTokens(changes); !s.ok()) return s;
  CounterLedger::StateDelta delta = ledger_.PendingState();
  for (auto& [part, value] : delta.put) changes[part_prefix_ + part] = std::move(value);
  for (const std::string& part : delta.erase) changes[part_prefix_ + part] = std::nullopt;
  if (migrate_) {
    changes[state_key_] = std::nullopt;
    for (const std::string& part : stale_parts_)
      changes.try_emplace(part_prefix_ + part, std::nullopt);
  }
  if (changes.empty()) return Status::Ok();
  if (Status s = store_.UpdateMeta(changes); !s.ok()) return s;  // still pending: next commit
  ledger_.StateSaved();
  if (auto it = changes.find(token_key_); it != changes.end())
    token_state_saved_ = std::move(*it->second);
  state_parts_written_ += static_cast<std::int64_t>(delta.put.size());
  migrate_ = false;
  stale_parts_.clear();
  return Status::Ok();
}

Status Ingestor::CommitTokens(std::map<std::string, std::optional<std::string>>& changes) {
  std::vector<TokenHour> rows = tokens_.TakeTouched();
  if (!rows.empty()) {
    if (Status s = store_.WriteTokenHours(rows); !s.ok()) {
      tokens_.Retouch(rows);  // written at the next commit
      return s;
    }
    token_hours_written_ += static_cast<std::int64_t>(rows.size());
  }
  if (tokens_.latest_us() != INT64_MIN) {
    tokens_.Forget(tokens_.latest_us() - keep_open_us);
    tokens_.Prune(tokens_.latest_us() - std::max(retention_us, keep_open_us));
  }
  std::string state = tokens_.State();
  if (state != token_state_saved_) changes[token_key_] = std::move(state);
  return Status::Ok();
}

}  // namespace gpuledger::ingest
