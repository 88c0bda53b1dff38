#include "guardrails/ledger_findings.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "billing/ledger_reads.h"
#include "common/time_util.h"
#include "report/window.h"

namespace gpuledger::guardrails {
namespace {

bool Matches(const Finding& f, const FindingsQuery& q) {
  if (q.kind && f.kind != *q.kind) return false;
  if (!q.namespace_name.empty() && f.subject.namespace_name != q.namespace_name) return false;
  if (q.min_severity && f.severity < *q.min_severity) return false;
  if (q.open_only && f.resolved_us) return false;
  return true;
}

nlohmann::json EvidenceJson(std::string_view evidence) {
  nlohmann::json out = nlohmann::json::object();
  for (auto& [k, v] : EvidencePairs(evidence)) out[k] = std::move(v);
  return out;
}

double Seconds(GpuMicros us) { return static_cast<double>(us) / 1e6; }

}  // namespace

Result<std::optional<FindingKind>> ParseKindFilter(std::string_view text) {
  if (text.empty()) return std::optional<FindingKind>();
  if (auto k = ParseFindingKind(text)) return std::optional<FindingKind>(*k);
  std::string kinds;
  for (int k = 0; k < kFindingKinds; ++k)
    kinds += (k ? ", " : "") + std::string(ToString(static_cast<FindingKind>(k)));
  return InvalidArgument(fmt::format("kind '{}': expected one of {}", text, kinds));
}

Result<std::optional<Severity>> ParseSeverityFilter(std::string_view text) {
  if (text.empty()) return std::optional<Severity>();
  if (auto s = ParseSeverity(text)) return std::optional<Severity>(*s);
  return InvalidArgument(fmt::format("severity '{}': expected info, warning or critical", text));
}

Result<FindingsDocument> ReadFindingsDocument(store::LedgerStore& store, const FindingsQuery& query,
                                              const Policy& policy) {
  auto extent = store.Extent();
  if (!extent) return extent.error();
  auto window = report::ResolveWindow(query.window, *extent);
  if (!window) return InvalidArgument("window: " + window.error().message);
  FindingsDocument doc;
  doc.from_us = window->from_us;
  doc.to_us = window->to_us;
  auto meta = store.ReadMeta();
  if (!meta) return meta.error();
  if (auto it = meta->find("cluster"); it != meta->end()) doc.cluster = it->second;
  if (auto it = meta->find("currency"); it != meta->end() && !it->second.empty())
    doc.currency = it->second;

  const TimeRange range{doc.from_us, doc.to_us};
  store::FindingQuery fq;
  fq.from_us = range.from_us;
  fq.to_us = range.to_us;
  fq.kind = query.kind;
  fq.namespace_name = query.namespace_name;
  fq.min_severity = query.min_severity;
  auto recorded = store.ReadFindings(fq);
  if (!recorded) return recorded.error();
  auto usage = billing::ReadUsageAtMost(store, range, query.max_usage_rows);
  if (!usage) return usage.error();
  auto devices = billing::ReadPricedDeviceHours(store, range);
  if (!devices) return devices.error();

  // Pod labels for label exemptions: the agent knows none, the ledger's rows carry them.
  std::map<ConsumerRef, const std::map<std::string, std::string>*> labels;
  for (const UsageRow& r : *usage) labels.try_emplace(r.consumer.ref, &r.consumer.labels);
  static const std::map<std::string, std::string> kNone;
  std::vector<Finding> all;
  for (Finding& f : *recorded) {
    auto l = labels.find(f.subject);
    if (!policy.Enabled(f.kind) ||
        policy.Exempt(f.kind, f.subject, l == labels.end() ? kNone : *l->second))
      continue;
    // The policy in force now says how severe it is; the agent's is what it was told then.
    f.severity = policy.For(f.kind).severity;
    if (Matches(f, query)) all.push_back(std::move(f));
  }
  for (Finding& f : DetectIdleAllocations(*usage, policy, doc.cluster, extent->to_us))
    if (Matches(f, query)) all.push_back(std::move(f));
  std::sort(all.begin(), all.end(), [](const Finding& a, const Finding& b) {
    return std::tie(a.first_seen_us, a.node, a.kind, a.subject, a.gpu_uuid) <
           std::tie(b.first_seen_us, b.node, b.kind, b.subject, b.gpu_uuid);
  });
  doc.findings = PriceFindings(all, *devices, *usage);
  for (const PricedFinding& p : doc.findings) {
    doc.total_cost_nanos += p.cost_nanos;
    doc.total_gpu_us += p.gpu_us;
    FindingsDocument::KindTotal& k = doc.by_kind[p.finding.kind];
    ++k.findings;
    if (!p.finding.resolved_us) ++k.open;
    k.gpu_us += p.gpu_us;
    k.cost_nanos += p.cost_nanos;
  }
  return doc;
}

nlohmann::json FindingsObject(const FindingsDocument& doc) {
  nlohmann::json findings = nlohmann::json::array();
  for (const PricedFinding& p : doc.findings) {
    const Finding& f = p.finding;
    const Micros end = f.resolved_us.value_or(f.last_seen_us);
    findings.push_back({
        {"kind", ToString(f.kind)},
        {"severity", ToString(f.severity)},
        {"state", f.resolved_us ? "resolved" : "open"},
        {"cluster", f.cluster},
        {"node", f.node},
        {"namespace", f.subject.namespace_name},
        {"pod", f.subject.pod},
        {"pod_uid", f.subject.pod_uid.value},
        {"container", f.subject.container},
        {"gpu_uuid", f.gpu_uuid},
        {"evidence", EvidenceJson(f.evidence)},
        {"first_seen", FormatRfc3339(f.first_seen_us)},
        {"last_seen", FormatRfc3339(f.last_seen_us)},
        {"resolved",
         f.resolved_us ? nlohmann::json(FormatRfc3339(*f.resolved_us)) : nlohmann::json()},
        {"duration_seconds", Seconds(std::max<Micros>(0, end - f.first_seen_us))},
        {"gpu_seconds", Seconds(p.gpu_us)},
        {"cost_nanos", p.cost_nanos},
        {"cost_basis", p.cost_basis},
        {"summary", Summary(p)},
    });
  }
  nlohmann::json by_kind = nlohmann::json::object();
  for (const auto& [kind, k] : doc.by_kind)
    by_kind[std::string(ToString(kind))] = {{"findings", k.findings},
                                            {"open", k.open},
                                            {"gpu_seconds", Seconds(k.gpu_us)},
                                            {"cost_nanos", k.cost_nanos}};
  nlohmann::json out = {
      {"window", {{"from", FormatRfc3339(doc.from_us)}, {"to", FormatRfc3339(doc.to_us)}}},
      {"cluster", doc.cluster},
      {"currency", doc.currency},
      {"total_cost_nanos", doc.total_cost_nanos},
      {"total_gpu_seconds", Seconds(doc.total_gpu_us)},
      {"findings", std::move(findings)},
      {"by_kind", std::move(by_kind)},
  };
  return out;
}

}  // namespace gpuledger::guardrails
