#pragma once
// A report row as it is summed (ledger/reports.cc from a snapshot's rows, ledger/day_rollup.cc
// from days kept summed): its numbers, and its rules as ids into a table of rule texts, merged
// into report::Figures' text once at the end rather than per row.

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "model/usage.h"
#include "report/report.h"

namespace gpuledger::ledger {

// A set of rule ids (into a table of rule texts, Snapshot::rules()); 0, the empty rule, is
// never added.
class RuleSet {
 public:
  void Add(std::uint16_t id) {
    if (id == 0) return;
    if (id < 64) {
      mask_ |= std::uint64_t{1} << id;
      return;
    }
    if (std::find(more_.begin(), more_.end(), id) == more_.end()) more_.push_back(id);
  }
  void Merge(const RuleSet& o) {
    mask_ |= o.mask_;
    for (std::uint16_t id : o.more_) Add(id);
  }
  // The text MergeRules gives for these rules merged in any order: one rule as it is, several
  // as the sorted union of their '+'-separated parts.
  std::string Text(const std::vector<std::string>& rules) const {
    std::vector<std::uint16_t> ids = more_;
    for (int i = 1; i < 64; ++i)
      if (mask_ & (std::uint64_t{1} << i)) ids.push_back(static_cast<std::uint16_t>(i));
    if (ids.empty()) return {};
    if (ids.size() == 1) return rules[ids[0]];
    std::string merged;
    for (std::uint16_t id : ids) merged = MergeRules(merged, rules[id]);
    return merged;
  }

 private:
  std::uint64_t mask_ = 0;
  std::vector<std::uint16_t> more_;
};

// One report row being summed: report::Figures with its rules as ids.
struct RowSums {
  bool present = false;
  GpuMicros allocated_us = 0;
  GpuMicros compute_us = 0;
  KibSeconds memory_kib_s = 0;
  MilliJoules energy_mj = 0;
  Nanos cost_nanos = 0;
  Quality quality = Quality::kNone;
  RuleSet compute_rule;
  Activity activity;
  GpuMicros activity_allocated_us = 0;
  GpuMicros activity_compute_us = 0;
  Quality activity_quality = Quality::kNone;
  RuleSet activity_rule;
  KibSeconds granted_memory_kib_s = 0;
  RuleSet share_source;
  GpuMicros naive_compute_us = 0;
  Nanos naive_cost_nanos = 0;
  GpuMicros compute_floor_us = 0;

  // Sums another part's rows of the same key (memory-time saturating, as Figures::Add).
  void Merge(const RowSums& o) {
    if (!o.present) return;
    present = true;
    allocated_us += o.allocated_us;
    compute_us += o.compute_us;
    memory_kib_s = report::AddKibSeconds(memory_kib_s, o.memory_kib_s);
    energy_mj += o.energy_mj;
    cost_nanos += o.cost_nanos;
    quality = Combine(quality, o.quality);
    compute_rule.Merge(o.compute_rule);
    activity += o.activity;
    activity_allocated_us += o.activity_allocated_us;
    activity_compute_us += o.activity_compute_us;
    activity_quality = Combine(activity_quality, o.activity_quality);
    activity_rule.Merge(o.activity_rule);
    granted_memory_kib_s = report::AddKibSeconds(granted_memory_kib_s, o.granted_memory_kib_s);
    share_source.Merge(o.share_source);
    naive_compute_us = report::AddSaturating(naive_compute_us, o.naive_compute_us);
    naive_cost_nanos = report::AddSaturating(naive_cost_nanos, o.naive_cost_nanos);
    compute_floor_us += o.compute_floor_us;
  }

  // A row's figures as sums, its rule texts numbered by `rule_id` (text -> id): ToFigures'
  // inverse, for rows summed already (a kept day's).
  template <typename RuleId>
  static RowSums FromFigures(const report::Figures& f, RuleId&& rule_id) {
    RowSums s;
    s.present = true;
    s.allocated_us = f.allocated_gpu_us;
    s.compute_us = f.compute_gpu_us;
    s.memory_kib_s = f.memory_kib_s;
    s.energy_mj = f.energy_mj;
    s.cost_nanos = f.cost_nanos;
    s.quality = f.quality;
    s.compute_rule.Add(rule_id(f.compute_rule));
    s.activity = f.activity;
    s.activity_allocated_us = f.activity_allocated_gpu_us;
    s.activity_compute_us = f.activity_compute_gpu_us;
    s.activity_quality = f.activity_quality;
    s.activity_rule.Add(rule_id(f.activity_rule));
    s.granted_memory_kib_s = f.granted_memory_kib_s;
    s.share_source.Add(rule_id(f.share_source));
    s.naive_compute_us = f.naive_compute_gpu_us;
    s.naive_cost_nanos = f.naive_cost_nanos;
    s.compute_floor_us = f.compute_floor_gpu_us;
    return s;
  }

  report::Figures ToFigures(const std::vector<std::string>& rules) const {
    report::Figures f;
    f.allocated_gpu_us = allocated_us;
    f.compute_gpu_us = compute_us;
    f.memory_kib_s = memory_kib_s;
    f.energy_mj = energy_mj;
    f.cost_nanos = cost_nanos;
    f.quality = quality;
    f.compute_rule = compute_rule.Text(rules);
    f.activity = activity;
    f.activity_allocated_gpu_us = activity_allocated_us;
    f.activity_compute_gpu_us = activity_compute_us;
    f.activity_quality = activity_quality;
    f.activity_rule = activity_rule.Text(rules);
    f.granted_memory_kib_s = granted_memory_kib_s;
    f.share_source = share_source.Text(rules);
    f.naive_compute_gpu_us = naive_compute_us;
    f.naive_cost_nanos = naive_cost_nanos;
    f.compute_floor_gpu_us = compute_floor_us;
    return f;
  }
};

// Fills `r`'s rows from sums by key id (a row per key present, named by `keys`, rule texts from
// `rules`), in report order, and its unpriced models.
inline void FinishRows(const std::vector<RowSums>& rows, const std::vector<std::string>& keys,
                       const std::vector<std::string>& rules, const std::set<std::string>& unpriced,
                       report::Report& r) {
  for (std::size_t key = 0; key < rows.size(); ++key) {
    if (!rows[key].present) continue;
    report::Figures f = rows[key].ToFigures(rules);
    r.rows.push_back(
        report::Row{keys[key], f, utilization::Classify(report::UtilizationInputs(f))});
  }
  report::SortRows(r.rows);
  r.total.unpriced_models.assign(unpriced.begin(), unpriced.end());
}

}  // namespace gpuledger::ledger
