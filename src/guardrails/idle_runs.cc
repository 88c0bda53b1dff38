#include "guardrails/idle_runs.h"

#include <utility>

#include <fmt/format.h>

namespace gpuledger::guardrails {

std::string IdlePolicyKey(const Policy& policy) {
  std::string key = fmt::format("idle<={}", policy.idle_compute_fraction);
  for (const Exemption& e : policy.exemptions) {
    if (!e.kinds.empty() &&
        std::find(e.kinds.begin(), e.kinds.end(), FindingKind::kIdleAllocation) == e.kinds.end())
      continue;
    key += fmt::format(";ns={}", e.namespace_name);
    for (const auto& [k, v] : e.labels) key += fmt::format(",{}={}", k, v);
  }
  return key;
}

IdleHours::Series IdleHours::SeriesOf(const FindingRow& row) {
  std::string device(row.device_id.starts_with("MIG-") ? row.device_id : row.gpu);
  auto [it, added] =
      index_.try_emplace({std::string(row.node), *row.subject, std::move(device)}, 0);
  if (!added) return it->second;
  it->second = states_.size();
  State& s = states_.emplace_back();
  std::tie(s.day.node, s.day.subject, s.day.device) = it->first;
  s.day.workload = std::string(row.workload);
  s.host = s.day.subject.IsHost();
  return it->second;
}

void IdleHours::Add(Series series, const FindingRow& row, const HourPrice& device,
                    const LabelMap& labels) {
  State& s = states_[series];
  if (s.host) return;
  if (row.hour_us != s.hour_us) {
    EndHour(s);
    s.hour_us = row.hour_us;
    s.device_id = row.device_id;
    s.labels = &labels;
  }
  s.allocated_us += row.allocated_us;
  s.compute_us += row.compute_us;
  s.cost_nanos += PriceOf(row.allocated_us, device);
}

void IdleHours::EndHour(State& s) {
  if (s.hour_us < 0) return;
  const bool idle =
      s.allocated_us > 0 && static_cast<double>(s.compute_us) <=
                                policy_.idle_compute_fraction * static_cast<double>(s.allocated_us);
  if (idle) {
    const bool exempt = policy_.Exempt(FindingKind::kIdleAllocation, s.day.subject, *s.labels);
    std::vector<IdleSegment>& segments = s.day.segments;
    if (!segments.empty() &&
        segments.back().from_us + segments.back().hours * kMicrosPerHour == s.hour_us &&
        segments.back().exempt == exempt) {
      IdleSegment& last = segments.back();
      ++last.hours;
      last.allocated_us += s.allocated_us;
      last.compute_us += s.compute_us;
      last.cost_nanos += s.cost_nanos;
    } else {
      segments.push_back({s.hour_us, 1, exempt, s.allocated_us, s.compute_us, s.cost_nanos,
                          std::move(s.device_id)});
    }
  }
  s.hour_us = -1;
  s.allocated_us = s.compute_us = 0;
  s.cost_nanos = 0;
  s.device_id.clear();
}

std::vector<IdleSeriesDay> IdleHours::Finish() {
  std::vector<IdleSeriesDay> out;
  for (State& s : states_) {
    EndHour(s);
    if (!s.day.segments.empty()) out.push_back(std::move(s.day));
  }
  index_.clear();
  states_.clear();
  return out;
}

IdleRuns::IdleRuns(const Policy& policy, std::string cluster, Micros now_us)
    : policy_(policy),
      enabled_(policy.Enabled(FindingKind::kIdleAllocation)),
      cluster_(std::move(cluster)),
      open_from_us_(HourStart(now_us) - kMicrosPerHour) {}  // the last complete hour

void IdleRuns::AddDay(const std::vector<IdleSeriesDay>& day, Micros part_from_us) {
  if (!enabled_) return;
  // A run goes on only into the hour after its last.
  const Micros first = HourStart(part_from_us);
  for (auto it = runs_.begin(); it != runs_.end();) {
    if (it->second.last_us + kMicrosPerHour >= first) {
      ++it;
      continue;
    }
    End(it->first, it->second);
    it = runs_.erase(it);
  }
  for (const IdleSeriesDay& series : day) {
    if (series.subject.IsHost()) continue;
    Key key{series.node, series.subject, series.device};
    auto run = runs_.find(key);
    for (const IdleSegment& segment : series.segments) {
      if (run != runs_.end() && run->second.last_us + kMicrosPerHour == segment.from_us) {
        Run& r = run->second;
        r.hours += segment.hours;
        r.last_us = segment.from_us + (segment.hours - 1) * kMicrosPerHour;
        r.allocated_us += segment.allocated_us;
        r.compute_us += segment.compute_us;
        r.cost_nanos += segment.cost_nanos;
        continue;
      }
      if (run != runs_.end()) {
        End(key, run->second);
        runs_.erase(run);
        run = runs_.end();
      }
      if (segment.exempt) continue;  // a run begins only where its subject is not exempt
      run = runs_
                .emplace(key, Run{series.workload, segment.hours, segment.from_us,
                                  segment.from_us + (segment.hours - 1) * kMicrosPerHour,
                                  segment.allocated_us, segment.compute_us, segment.cost_nanos,
                                  segment.device_id})
                .first;
    }
  }
}

void IdleRuns::End(const Key& key, const Run& run) {
  if (run.hours < policy_.idle_allocation_hours || run.hours <= 0) return;
  Finding f;
  f.kind = FindingKind::kIdleAllocation;
  f.severity = policy_.For(f.kind).severity;
  f.cluster = cluster_;
  std::tie(f.node, f.subject, f.gpu_uuid) = key;
  f.workload = run.workload;
  f.first_seen_us = run.first_us;
  f.last_seen_us = run.last_us + kMicrosPerHour;
  if (run.last_us < open_from_us_) f.resolved_us = f.last_seen_us;
  f.evidence = fmt::format("hours={} allocated_gpu_us={} compute_gpu_us={}", run.hours,
                           run.allocated_us, run.compute_us);
  if (!run.device_id.empty()) f.evidence += " device_id=" + run.device_id;
  found_.push_back({std::move(f), run.allocated_us, run.cost_nanos, std::string(kIdleBasis)});
}

std::vector<PricedFinding> IdleRuns::Finish() {
  for (const auto& [key, run] : runs_) End(key, run);
  runs_.clear();
  return std::move(found_);
}

}  // namespace gpuledger::guardrails
