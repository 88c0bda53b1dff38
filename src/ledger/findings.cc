#include "ledger/findings.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/time_util.h"
#include "model/action.h"
#include "report/report.h"
#include "report/window.h"
#include "store/ledger_identity.h"

namespace gpuledger::guardrails {
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

namespace {

// Prices a window's recorded findings and finds its idle allocations, a day of rows at a time.
class FindingsOverDays final : public ledger::DayReader {
 public:
  FindingsOverDays(std::vector<Finding> recorded, const Policy& policy, std::string cluster,
                   Micros now_us)
      : recorded_(std::move(recorded)),
        policy_(policy),
        cluster_(std::move(cluster)),
        now_us_(now_us) {
    for (const Finding& f : recorded_) subjects_.insert(f.subject);
  }

  void Begin() override {
    costs_.emplace(recorded_);
    idle_.emplace(policy_, cluster_, now_us_);
    labels_.clear();
  }

  Status OnDay(const ledger::Snapshot& s, const TimeRange& part) override {
    idle_->Through(part.from_us);
    const auto& consumers = s.consumers();
    const auto& contexts = s.contexts();
    const auto& placements = s.placements();
    const auto& device_ids = s.device_ids();
    // What each consumer and placement of the snapshot is to findings, looked up once a day.
    std::vector<char> subject(consumers.size()), priced(consumers.size());
    for (std::size_t c = 0; c < consumers.size(); ++c) {
      subject[c] = subjects_.contains(consumers[c].ref) && !labels_.contains(consumers[c].ref);
      priced[c] = costs_->Concerns(consumers[c].ref);
    }
    std::vector<char> stale_node(placements.size());
    for (std::size_t p = 0; p < placements.size(); ++p)
      stale_node[p] = costs_->ConcernsDevicesOf(placements[p].node);
    // The MIG instances the part's rows hold name their GPUs (a snapshot kept may hold others).
    std::vector<char> instance(contexts.size());
    for (std::size_t c = 0; c < contexts.size(); ++c)
      instance[c] = device_ids[contexts[c].device_id].starts_with("MIG-");
    const bool idle = policy_.Enabled(FindingKind::kIdleAllocation);
    std::unordered_map<std::uint64_t, IdleRuns::Series> series;  // by consumer and context
    // Each consumer's workload, worked out when a series of it first needs it.
    std::vector<std::optional<std::string>> workload(idle ? consumers.size() : 0);

    const auto& usage = s.usage();
    const auto [first, last] = s.DeviceRange(part.from_us, part.to_us);
    for (std::size_t d = first; d < last; ++d) {
      const ledger::DeviceFigures device = s.devices()[d];
      const HourPrice price{device.price_nanos, device.metered_us, device.memory_total_bytes};
      if (stale_node[device.placement]) {
        const ledger::Placement& p = placements[device.placement];
        costs_->AddDeviceHour(device.hour_us, p.node, p.gpu.value, price);
      }
      for (std::uint32_t i = s.first_usage()[d]; i < s.first_usage()[d + 1]; ++i) {
        const std::uint32_t c = usage.consumer[i];
        const std::uint32_t k = usage.context[i];
        const ledger::RowContext& context = contexts[k];
        const ledger::Placement& p = placements[context.placement];
        if (instance[k]) {
          costs_->NameInstance(device_ids[context.device_id], p.gpu.value);
          instance[k] = 0;
        }
        if (!idle && !subject[c] && !priced[c]) continue;
        const ledger::UsageFigures f = usage.figures[i];
        const FindingRow row{device.hour_us,
                             p.node,
                             &consumers[c].ref,
                             p.gpu.value,
                             device_ids[context.device_id],
                             f.weights.allocated_us,
                             f.weights.compute_us,
                             f.weights.memory_kib_s};
        if (subject[c]) labels_.try_emplace(consumers[c].ref, s.labels(c).labels);
        if (priced[c]) costs_->AddRow(row, price);
        if (!idle) continue;
        const std::uint64_t key = std::uint64_t{c} << 32 | k;
        auto [at, added] = series.try_emplace(key, 0);
        if (added) {
          if (!workload[c]) workload[c] = report::WorkloadOf(consumers[c]);
          FindingRow named = row;
          named.workload = *workload[c];
          at->second = idle_->SeriesOf(named);
        }
        idle_->Add(at->second, row, price, s.labels(c).labels);
      }
    }
    return Status::Ok();
  }

  // The recorded findings priced (those exempt by their subject's labels left out), then the
  // idle allocations.
  std::pair<std::vector<PricedFinding>, std::vector<PricedFinding>> Take() {
    std::vector<PricedFinding> recorded;
    static const LabelMap kNone;
    for (PricedFinding& p : costs_->Take()) {
      auto l = labels_.find(p.finding.subject);
      if (!policy_.Exempt(p.finding.kind, p.finding.subject,
                          l == labels_.end() ? kNone : l->second))
        recorded.push_back(std::move(p));
    }
    return {std::move(recorded), idle_->Finish()};
  }

 private:
  const std::vector<Finding> recorded_;
  const Policy& policy_;
  const std::string cluster_;
  const Micros now_us_;
  std::set<ConsumerRef> subjects_;  // of the recorded findings
  std::optional<FindingCosts> costs_;
  std::optional<IdleRuns> idle_;
  // The pod labels of each recorded finding's subject, from its first row in the window.
  std::map<ConsumerRef, LabelMap> labels_;
};

}  // namespace

Result<FindingsDocument> ReadFindingsDocument(store::LedgerStore& store, ledger::ReadService& reads,
                                              const FindingsQuery& query, const Policy& policy) {
  auto extent = store.Extent();
  if (!extent) return extent.error();
  auto window = report::ResolveWindow(query.window, *extent);
  if (!window) return InvalidArgument("window: " + window.error().message);
  FindingsDocument doc;
  doc.from_us = window->from_us;
  doc.to_us = window->to_us;
  auto identity = store::ReadLedgerIdentity(store);
  if (!identity) return identity.error();
  doc.cluster = identity->cluster;
  doc.currency = identity->currency;

  store::FindingQuery fq;
  fq.from_us = doc.from_us;
  fq.to_us = doc.to_us;
  fq.kind = query.kind;
  fq.namespace_name = query.namespace_name;
  fq.min_severity = query.min_severity;
  auto recorded = store.ReadFindings(fq);
  if (!recorded) return recorded.error();
  std::vector<Finding> wanted;
  for (Finding& f : *recorded) {
    if (!policy.Enabled(f.kind)) continue;
    // The policy in force now says how severe it is; the agent's is what it was told then.
    f.severity = policy.For(f.kind).severity;
    if (Matches(f, query)) wanted.push_back(std::move(f));
  }
  FindingsOverDays days(std::move(wanted), policy, doc.cluster, extent->to_us);
  if (Status s = reads.EachDay(store, {doc.from_us, doc.to_us}, days); !s.ok()) return s.error();
  auto [all, idle] = days.Take();
  for (PricedFinding& p : idle)
    if (Matches(p.finding, query)) all.push_back(std::move(p));
  std::sort(all.begin(), all.end(), [](const PricedFinding& x, const PricedFinding& y) {
    const Finding& a = x.finding;
    const Finding& b = y.finding;
    return std::tie(a.first_seen_us, a.node, a.kind, a.subject, a.gpu_uuid) <
           std::tie(b.first_seen_us, b.node, b.kind, b.subject, b.gpu_uuid);
  });
  doc.findings = std::move(all);
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
