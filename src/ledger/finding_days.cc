#include "ledger/finding_days.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>

#include "report/report.h"

namespace gpuledger::ledger {
namespace {

// Whether the hours of `part` can price `f` (FindingCosts prices the hours it overlaps; a
// part's first hour may begin before the part).
bool Prices(const Finding& f, const TimeRange& part) {
  const Micros end = std::max(f.first_seen_us, f.resolved_us.value_or(f.last_seen_us));
  return f.first_seen_us < part.to_us && end > part.from_us - kMicrosPerHour;
}

}  // namespace

std::string FindingsSummarizer::Key() const {
  return "findings " + guardrails::IdlePolicyKey(policy_);
}

Result<std::shared_ptr<const ledger::DaySummary>> FindingsSummarizer::Summarize(
    store::LedgerStore& store, const ledger::Snapshot& s, const TimeRange& part) {
  auto day = std::make_shared<FindingsDay>();
  // The subjects and nodes of every finding recorded over the part, whatever this read asks:
  // a later read with other filters finds them held.
  if (!recorded_) {
    store::FindingQuery over_window;
    over_window.from_us = window_.from_us - kMicrosPerHour;
    over_window.to_us = window_.to_us;
    auto recorded = store.ReadFindings(over_window);
    if (!recorded) return recorded.error();
    recorded_ = std::move(*recorded);
  }
  const std::vector<Finding>* const lists[] = {&*recorded_, &priced_};
  for (const std::vector<Finding>* findings : lists)
    for (const Finding& f : *findings) {
      if (!Prices(f, part)) continue;
      day->subjects.insert(f.subject);
      if (f.kind == FindingKind::kStaleGrant) day->nodes.insert(f.node);
    }

  const auto& consumers = s.consumers();
  const auto& contexts = s.contexts();
  const auto& placements = s.placements();
  const auto& device_ids = s.device_ids();
  // What each consumer and placement of the snapshot is to findings, looked up once.
  std::vector<char> subject(consumers.size());
  for (std::size_t c = 0; c < consumers.size(); ++c)
    subject[c] = day->subjects.contains(consumers[c].ref);
  std::vector<char> stale_node(placements.size());
  for (std::size_t p = 0; p < placements.size(); ++p)
    stale_node[p] = day->nodes.contains(placements[p].node);
  // The MIG instances the part's rows hold name their GPUs (a snapshot kept may hold others).
  std::vector<char> instance(contexts.size());
  for (std::size_t c = 0; c < contexts.size(); ++c)
    instance[c] = device_ids[contexts[c].device_id].starts_with("MIG-");
  guardrails::IdleHours idle(policy_);
  std::unordered_map<std::uint64_t, guardrails::IdleHours::Series>
      series;  // by consumer and context
  // Each consumer's workload, worked out when a series of it first needs it.
  std::vector<std::optional<std::string>> workload(consumers.size());
  std::map<const LabelMap*, std::uint32_t> label_ids;  // the snapshot's sets, kept once

  const auto& usage = s.usage();
  const auto [first, last] = s.DeviceRange(part.from_us, part.to_us);
  for (std::size_t d = first; d < last; ++d) {
    const ledger::DeviceFigures device = s.devices()[d];
    const guardrails::HourPrice price{device.price_nanos, device.metered_us,
                                      device.memory_total_bytes};
    if (stale_node[device.placement]) {
      const ledger::Placement& p = placements[device.placement];
      day->device_hours.push_back({device.hour_us, p.node, p.gpu.value, price});
    }
    for (std::uint32_t i = s.first_usage()[d]; i < s.first_usage()[d + 1]; ++i) {
      const std::uint32_t c = usage.consumer[i];
      const std::uint32_t k = usage.context[i];
      const ledger::RowContext& context = contexts[k];
      const ledger::Placement& p = placements[context.placement];
      const std::string& device_id = device_ids[context.device_id];
      if (instance[k]) {
        day->instances.emplace_back(device_id, p.gpu.value);
        instance[k] = 0;
      }
      const ledger::UsageFigures f = usage.figures[i];
      const ConsumerRef& ref = consumers[c].ref;
      const auto labels = s.labels(c);
      if (subject[c]) {
        auto [id, added] = label_ids.try_emplace(&labels.labels, day->label_sets.size());
        if (added) day->label_sets.push_back(labels.labels);
        day->rows.push_back({device.hour_us, p.node, ref, p.gpu.value, device_id,
                             f.weights.allocated_us, f.weights.compute_us, f.weights.memory_kib_s,
                             price, id->second});
      }
      const guardrails::FindingRow row{device.hour_us,
                                       p.node,
                                       &ref,
                                       p.gpu.value,
                                       device_id,
                                       f.weights.allocated_us,
                                       f.weights.compute_us,
                                       f.weights.memory_kib_s};
      const std::uint64_t key = std::uint64_t{c} << 32 | k;
      auto [at, added] = series.try_emplace(key, 0);
      if (added) {
        if (!workload[c]) workload[c] = report::WorkloadOf(consumers[c]);
        guardrails::FindingRow named = row;
        named.workload = *workload[c];
        at->second = idle.SeriesOf(named);
      }
      idle.Add(at->second, row, price, labels.labels);
    }
  }
  day->idle = idle.Finish();
  return std::shared_ptr<const ledger::DaySummary>(std::move(day));
}

bool FindingsSummarizer::Serves(const ledger::DaySummary& held, const TimeRange& part) const {
  const auto& day = static_cast<const FindingsDay&>(held);
  return std::none_of(priced_.begin(), priced_.end(), [&](const Finding& f) {
    return Prices(f, part) && (!day.subjects.contains(f.subject) ||
                               (f.kind == FindingKind::kStaleGrant && !day.nodes.contains(f.node)));
  });
}

}  // namespace gpuledger::ledger
