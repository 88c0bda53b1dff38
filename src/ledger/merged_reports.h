#pragma once
// Reports of parts of a window (days, steps) added up into the window's: what a reader that
// holds one part at a time (read_reports.h) and SumSteps (reports.h) both do.

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "report/report.h"
#include "utilization/classify.h"

namespace gpuledger::ledger {

// Reports built a part of the window at a time, summed into the window's.
class MergedReports {
 public:
  void Add(std::vector<report::Report> part) {
    if (reports_.empty()) {
      rows_.resize(part.size());
      unpriced_.resize(part.size());
      for (report::Report& r : part) {
        report::Report empty;
        empty.from_us = r.from_us;
        empty.to_us = r.to_us;
        empty.group_by = std::move(r.group_by);
        empty.policy = r.policy;
        empty.idle_handling = std::move(r.idle_handling);
        reports_.push_back(std::move(empty));
      }
    }
    for (std::size_t i = 0; i < part.size(); ++i) {
      report::Report& into = reports_[i];
      const report::Report& r = part[i];
      for (const report::Row& row : r.rows) {
        auto [it, added] = rows_[i].try_emplace(row.key);
        it->second.Add(row.figures);
        row_count_ += added ? 1 : 0;
      }
      into.idle.Add(r.idle);
      into.unattributed.Add(r.unattributed);
      into.total.AddSums(r.total);
      unpriced_[i].insert(r.total.unpriced_models.begin(), r.total.unpriced_models.end());
    }
  }

  // The steps, the rows held over every step, and about what each row takes here and once
  // finished.
  std::size_t steps() const { return reports_.size(); }
  std::size_t rows() const { return row_count_; }
  static constexpr std::size_t kRowBytes = sizeof(report::Row) + sizeof(report::Figures) + 64;

  std::vector<report::Report> Finish() {
    for (std::size_t i = 0; i < reports_.size(); ++i) {
      report::Report& r = reports_[i];
      for (auto& [key, f] : rows_[i])
        r.rows.push_back(report::Row{key, f, utilization::Classify(report::UtilizationInputs(f))});
      report::SortRows(r.rows);
      r.total.unpriced_models.assign(unpriced_[i].begin(), unpriced_[i].end());
    }
    return std::move(reports_);
  }

 private:
  std::vector<report::Report> reports_;
  std::vector<std::map<std::string, report::Figures>> rows_;
  std::size_t row_count_ = 0;
  std::vector<std::set<std::string>> unpriced_;
};

}  // namespace gpuledger::ledger
