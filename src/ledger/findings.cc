#include "ledger/findings.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/time_util.h"
#include "guardrails/idle_runs.h"
#include "ledger/finding_days.h"
#include "ledger/report_request.h"
#include "model/action.h"
#include "report/report.h"
#include "report/window.h"
#include "store/ledger_identity.h"

namespace gpuledger::ledger {
namespace {

bool Matches(const Finding& f, const FindingsQuery& q) {
  if (q.kind && f.kind != *q.kind) return false;
  if (!q.namespace_name.empty() && f.subject.namespace_name != q.namespace_name) return false;
  if (!q.workload.empty() && f.workload != q.workload) return false;
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

void SumTotals(FindingsDocument& doc) {
  for (const guardrails::PricedFinding& p : doc.findings) {
    doc.total_cost_nanos += p.cost_nanos;
    doc.total_gpu_us += p.gpu_us;
    FindingsDocument::KindTotal& k = doc.by_kind[p.finding.kind];
    ++k.findings;
    if (!p.finding.resolved_us) ++k.open;
    k.gpu_us += p.gpu_us;
    k.cost_nanos += p.cost_nanos;
  }
}

Result<FindingsDocument> ReadFindingsDocument(store::LedgerStore& store, ledger::ReadService& reads,
                                              const FindingsQuery& query,
                                              const guardrails::Policy& policy) {
  auto scope = ledger::ResolveReadScope(store, query.window);
  if (!scope) return scope.error();
  FindingsDocument doc;
  doc.from_us = scope->window.from_us;
  doc.to_us = scope->window.to_us;
  doc.cluster = scope->cluster;
  doc.currency = scope->currency;

  auto recorded = store.ReadFindings({.from_us = doc.from_us,
                                      .to_us = doc.to_us,
                                      .kind = query.kind,
                                      .namespace_name = query.namespace_name,
                                      .min_severity = query.min_severity});
  if (!recorded) return recorded.error();
  std::vector<Finding> wanted;
  for (Finding& f : *recorded) {
    if (!policy.Enabled(f.kind)) continue;
    // The policy in force now says how severe it is; the agent's is what it was told then.
    f.severity = policy.For(f.kind).severity;
    if (Matches(f, query)) wanted.push_back(std::move(f));
  }
  FindingsSummarizer summarizer(policy, wanted, {doc.from_us, doc.to_us});
  auto parts = reads.Summaries(store, {doc.from_us, doc.to_us}, summarizer);
  if (!parts) return parts.error();
  guardrails::FindingCosts costs(wanted);
  guardrails::IdleRuns idle(policy, doc.cluster, scope->extent.to_us);
  // The pod labels each recorded finding's subject carried when it was first seen (its first
  // row in the window from that hour on; of one hour, the least set), by finding.
  std::multimap<ConsumerRef, std::size_t> by_subject;
  for (std::size_t i = 0; i < wanted.size(); ++i) by_subject.emplace(wanted[i].subject, i);
  std::vector<std::pair<Micros, const LabelMap*>> labels(wanted.size(), {0, nullptr});
  for (const ledger::SummarizedPart& part : *parts) {
    const auto& day = static_cast<const FindingsDay&>(*part.summary);
    for (const auto& [instance, gpu] : day.instances) costs.NameInstance(instance, gpu);
    for (const FindingsDay::DeviceHour& h : day.device_hours)
      if (costs.ConcernsDevicesOf(h.node)) costs.AddDeviceHour(h.hour_us, h.node, h.gpu, h.price);
    for (const FindingsDay::Row& r : day.rows) {
      if (costs.Concerns(r.subject))
        costs.AddRow({r.hour_us, r.node, &r.subject, r.gpu, r.device_id, r.allocated_us,
                      r.compute_us, r.memory_kib_s},
                     r.price);
      const LabelMap& pod_labels = day.label_sets[r.labels];
      for (auto [f, end] = by_subject.equal_range(r.subject); f != end; ++f) {
        auto& [hour, seen] = labels[f->second];
        if (r.hour_us + kMicrosPerHour <= wanted[f->second].first_seen_us) continue;
        if (seen == nullptr || r.hour_us < hour || (r.hour_us == hour && pod_labels < *seen))
          labels[f->second] = {r.hour_us, &pod_labels};
      }
    }
    idle.AddDay(day.idle, part.range.from_us);
  }
  // The recorded findings priced (those exempt by their subject's labels left out), then the
  // idle allocations.
  std::vector<guardrails::PricedFinding> all;
  static const LabelMap kNone;
  std::vector<guardrails::PricedFinding> priced = costs.Take();  // in the order of `wanted`
  for (std::size_t i = 0; i < priced.size(); ++i) {
    const Finding& f = priced[i].finding;
    if (!policy.Exempt(f.kind, f.subject, labels[i].second ? *labels[i].second : kNone))
      all.push_back(std::move(priced[i]));
  }
  for (guardrails::PricedFinding& p : idle.Finish())
    if (Matches(p.finding, query)) all.push_back(std::move(p));
  std::sort(all.begin(), all.end(),
            [](const guardrails::PricedFinding& x, const guardrails::PricedFinding& y) {
              const Finding& a = x.finding;
              const Finding& b = y.finding;
              return std::tie(a.first_seen_us, a.node, a.kind, a.subject, a.gpu_uuid) <
                     std::tie(b.first_seen_us, b.node, b.kind, b.subject, b.gpu_uuid);
            });
  doc.findings = std::move(all);
  SumTotals(doc);
  return doc;
}

nlohmann::json FindingsObject(const FindingsDocument& doc) {
  nlohmann::json findings = nlohmann::json::array();
  for (const guardrails::PricedFinding& p : doc.findings) {
    const Finding& f = p.finding;
    const Micros end = f.resolved_us.value_or(f.last_seen_us);
    findings.push_back({
        {"kind", ToString(f.kind)},
        {"remedy", gpuledger::ToString(RemedyFor(f.kind))},
        {"workload", f.workload.empty() ? nlohmann::json() : nlohmann::json(f.workload)},
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
        {"summary", guardrails::Summary(p)},
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

}  // namespace gpuledger::ledger
