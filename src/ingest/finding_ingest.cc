#include "ingest/finding_ingest.h"

#include <cmath>
#include <set>

namespace gpuledger::ingest {
namespace {

std::string_view Label(const Labels& labels, std::string_view name) {
  for (const auto& [k, v] : labels)
    if (k == name) return v;
  return {};
}

Micros FromSeconds(double seconds) {
  // The agent writes whole µs as seconds; timestamps of a sane clock fit well within range.
  if (!std::isfinite(seconds) || std::fabs(seconds) > 1e11) return 0;
  return static_cast<Micros>(std::llround(seconds * 1e6));
}

}  // namespace

const std::vector<std::string>& FindingSeriesNames() {
  static const std::vector<std::string> kNames = {"gpuledger_findings_total",
                                                  "gpuledger_finding_evidence_info",
                                                  "gpuledger_finding_first_seen_timestamp_seconds",
                                                  "gpuledger_finding_last_seen_timestamp_seconds",
                                                  "gpuledger_finding_resolved_timestamp_seconds"};
  return kNames;
}

Status FindingIngest::Restore(store::LedgerStore& store) {
  store::FindingQuery q;
  q.open_only = true;
  auto open = store.ReadFindings(q);
  if (!open) return open.error();
  for (Finding& f : *open) {
    if (f.cluster != cluster_) continue;
    NodeState& n = nodes_[f.node];
    n.last_scrape_us = std::max(n.last_scrape_us, f.last_seen_us);
    SeriesKey key{f.kind, f.subject.namespace_name, f.subject.pod, f.subject.container, f.gpu_uuid};
    n.open[key] = std::move(f);
  }
  return Status::Ok();
}

void FindingIngest::Feed(const TargetScrape& scrape) {
  std::string node;
  std::map<SeriesKey, Finding> seen;
  std::map<SeriesKey, Micros> first, last, resolved;
  bool has_findings_series = false;
  for (const Sample& s : scrape.samples) {
    if (node.empty() && s.name == "gpuledger_device_info")
      node = std::string(Label(s.labels, "node"));
    if (!s.name.starts_with("gpuledger_finding")) continue;
    if (s.name == "gpuledger_findings_total") {
      has_findings_series = true;
      continue;
    }
    auto kind = ParseFindingKind(Label(s.labels, "kind"));
    if (!kind) continue;  // a kind a newer agent knows: not ours to record
    SeriesKey key{*kind, std::string(Label(s.labels, "namespace")),
                  std::string(Label(s.labels, "pod")), std::string(Label(s.labels, "container")),
                  std::string(Label(s.labels, "gpu_uuid"))};
    if (s.name == "gpuledger_finding_evidence_info") {
      Finding f;
      f.kind = *kind;
      f.severity = ParseSeverity(Label(s.labels, "severity")).value_or(Severity::kWarning);
      f.cluster = cluster_;
      f.subject = ConsumerRef{std::get<1>(key), std::get<2>(key),
                              PodUid{std::string(Label(s.labels, "pod_uid"))}, std::get<3>(key)};
      f.gpu_uuid = std::get<4>(key);
      f.evidence = std::string(Label(s.labels, "evidence"));
      seen[key] = std::move(f);
    } else if (s.name == "gpuledger_finding_first_seen_timestamp_seconds") {
      first[key] = FromSeconds(s.value);
    } else if (s.name == "gpuledger_finding_last_seen_timestamp_seconds") {
      last[key] = FromSeconds(s.value);
    } else if (s.name == "gpuledger_finding_resolved_timestamp_seconds") {
      resolved[key] = FromSeconds(s.value);
    }
  }
  // An agent from before guardrails says nothing about findings: nothing to resolve.
  if (!has_findings_series && seen.empty()) return;
  if (node.empty()) node = scrape.instance;
  NodeState& n = nodes_[node];
  n.last_scrape_us = std::max(n.last_scrape_us, scrape.at_us);

  for (auto& [key, f] : seen) {
    f.node = node;
    if (auto it = first.find(key); it != first.end()) f.first_seen_us = it->second;
    if (auto it = last.find(key); it != last.end()) f.last_seen_us = it->second;
    if (auto it = resolved.find(key); it != resolved.end()) f.resolved_us = it->second;
    auto open = n.open.find(key);
    if (open != n.open.end() && open->second.first_seen_us != f.first_seen_us) {
      // Another occurrence (it resolved unseen, or the agent restarted): the old one ended at
      // its last sight.
      Finding old = open->second;
      old.resolved_us = old.last_seen_us;
      Changed(old);
      n.open.erase(open);
      open = n.open.end();
    }
    if (open != n.open.end() && open->second == f) continue;  // nothing new
    Changed(f);
    if (f.resolved_us) {
      if (open != n.open.end()) n.open.erase(open);
    } else {
      n.open[key] = f;
    }
  }
  for (auto it = n.open.begin(); it != n.open.end();) {
    if (seen.count(it->first)) {
      ++it;
      continue;
    }
    Finding f = it->second;
    f.resolved_us = f.last_seen_us;
    Changed(f);
    it = n.open.erase(it);
  }
}

void FindingIngest::Prune(Micros before_us) {
  for (auto it = nodes_.begin(); it != nodes_.end();) {
    if (it->second.last_scrape_us >= before_us) {
      ++it;
      continue;
    }
    for (auto& [key, f] : it->second.open) {
      Finding r = f;
      r.resolved_us = r.last_seen_us;
      Changed(r);
    }
    it = nodes_.erase(it);
  }
}

Status FindingIngest::Commit(store::LedgerStore& store) {
  if (pending_.empty()) return Status::Ok();
  std::vector<Finding> changes;
  changes.reserve(pending_.size());
  for (auto& [key, f] : pending_) changes.push_back(f);
  if (Status s = store.WriteFindings(changes); !s.ok()) return s;  // kept: the next commit
  pending_.clear();
  return Status::Ok();
}

std::size_t FindingIngest::open_findings() const {
  std::size_t n = 0;
  for (const auto& [node, state] : nodes_) n += state.open.size();
  return n;
}

}  // namespace gpuledger::ingest
