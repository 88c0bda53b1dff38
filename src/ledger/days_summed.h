#pragma once
// Days kept summed (day_rollup.h) as a reader holds them in memory and regroups them: a day's
// rows with their entries and rule texts as ids into DayTables, so a grouping works each
// entry's key once however many days name it, and a day's rows are integers. The CLI holds a
// day at a time (ReadReports); the server holds its kept window (HeldDays) and regroups it per
// report without reading the ledger.

#include <array>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/text_hash.h"
#include "ledger/filter.h"
#include "ledger/reports.h"
#include "ledger/row_sums.h"
#include "report/report.h"

namespace gpuledger::ledger {

// A kept row's numbers, in report::Figures' order (day_rollup.cc writes them so).
inline constexpr std::size_t kSummedNumbers = 15;
std::array<std::int64_t, kSummedNumbers> NumbersOf(const report::Figures& f);
// The numbers NumbersOf took from figures, put back into `f` (its qualities and rules as they
// are).
void PutNumbers(const std::array<std::int64_t, kSummedNumbers>& v, report::Figures& f);

// A day's row at its finest grain: its entry (report::EncodeEntry's text) and rule texts as
// ids into the DayTables that read it.
struct SummedRow {
  std::array<std::int64_t, kSummedNumbers> numbers{};
  std::uint32_t entry = 0;
  std::array<std::uint16_t, 3> rules{};  // compute rule, activity rule, share source
  Quality quality = Quality::kNone;
  Quality activity_quality = Quality::kNone;
};

// A whole day summed for one policy and idle handling (a DayRollup, its rows as ids).
struct SummedDay {
  Micros from_us = 0;
  Micros to_us = 0;
  report::Figures idle;
  report::Figures unattributed;
  report::Totals total;
  report::SumCheck sums;  // the magnitude sums of the day's rows
  std::vector<SummedRow> rows;
};

// The entries and rule texts days are read against, and each grouping's key of each entry,
// worked once. Not thread-safe.
class DayTables {
 public:
  DayTables() = default;
  // Groupings point at their tables.
  DayTables(const DayTables&) = delete;
  DayTables& operator=(const DayTables&) = delete;

  std::uint32_t Entry(std::string_view text);
  // 0 for the empty rule. Past 65,535 distinct texts ids would wrap: ok() turns false, and a
  // reader sums from rows instead.
  std::uint16_t Rule(std::string_view text);
  bool ok() const { return ok_; }
  const std::vector<std::string>& rules() const { return rules_; }
  std::size_t entries() const { return entry_texts_.size(); }
  const std::string& entry(std::uint32_t id) const { return *entry_texts_[id]; }

  // A grouping's key of each entry (by report::KeyOf of the decoded entry).
  class Grouping {
   public:
    Grouping(const DayTables& tables, std::vector<report::Dimension> group_by)
        : tables_(tables), group_by_(std::move(group_by)) {}
    std::uint32_t KeyOfEntry(std::uint32_t entry);
    // A key already made (a row of a report grouped so).
    std::uint32_t KeyOf(std::string_view key);
    const std::vector<std::string>& keys() const { return keys_; }

   private:
    const DayTables& tables_;
    const std::vector<report::Dimension> group_by_;
    std::vector<std::uint32_t> key_of_entry_;  // key id + 1; 0 not worked yet
    std::unordered_map<std::string, std::uint32_t, TextHash, std::equal_to<>> key_ids_;
    std::vector<std::string> keys_;
  };
  // The grouping's memo, kept for the next report grouped so (a handful are kept).
  Grouping& GroupingOf(const std::vector<report::Dimension>& group_by);

  // Whether a filter keeps each entry (Matches of the decoded entry), worked once.
  class Selection {
   public:
    Selection(const DayTables& tables, Filter filter)
        : tables_(tables), filter_(std::move(filter)) {}
    bool Keeps(std::uint32_t entry);

   private:
    const DayTables& tables_;
    const Filter filter_;
    std::vector<std::int8_t> keeps_;  // 1 kept, 0 left out, -1 not worked yet
  };
  // The filter's memo, kept for the next report filtered so (a handful are kept).
  Selection& SelectionOf(const Filter& filter);

 private:
  std::unordered_map<std::string, std::uint32_t, TextHash, std::equal_to<>> entry_ids_;
  std::vector<const std::string*> entry_texts_;  // into entry_ids_' keys, which never move
  std::unordered_map<std::string, std::uint16_t, TextHash, std::equal_to<>> rule_ids_;
  std::vector<std::string> rules_ = {""};
  bool ok_ = true;
  std::unordered_map<std::string, std::unique_ptr<Grouping>> groupings_;
  std::unordered_map<std::string, std::unique_ptr<Selection>> selections_;
};

// `day` (a DayRollup's report, its rows' keys entries) as a SummedDay of `tables`.
SummedDay ToSummedDay(const report::Report& day, const report::SumCheck& sums, DayTables& tables);

// Days summed, regrouped and summed as the reports of a query (its window, grouping, policy
// and idle handling, filter, and its steps, which ReadsDaysSummed makes whole days). A filter
// keeps the rows of the entries it matches, each as it is in the whole cluster, as
// BuildReports' filter does; with rows_only the idle, unattributed and totals stay zero.
class DaysSummed {
 public:
  DaysSummed(const ReportQuery& query, DayTables& tables);

  // Adds a day of the window, read against the tables given.
  void Add(const SummedDay& day);
  // Adds a report of the same query over a part of the window (rows already grouped): the
  // step it starts in takes it.
  void AddGrouped(const report::Report& part);
  bool empty() const { return days_ == 0; }
  // The magnitude sums of the rows of every day added.
  const report::SumCheck& sums() const { return sums_; }
  // A report per step (one without a step) over the days added, as BuildReports would give
  // them over their rows.
  std::vector<report::Report> Finish();

 private:
  struct Step;
  Step& StepAt(Micros from_us);
  // This report's own id for a grouping's key: a report's rows are sized by the keys it met,
  // not by every key the tables have met.
  std::uint32_t Local(std::uint32_t key);

  // One step's report being summed.
  struct Step {
    report::Report report;      // the heading: window, grouping, policy, idle handling
    std::vector<RowSums> rows;  // by local key id
    std::set<std::string> unpriced;
    // What a day or part adds besides its rows.
    void AddTotals(const report::Figures& idle, const report::Figures& unattributed,
                   const report::Totals& total) {
      report.idle.Add(idle);
      report.unattributed.Add(unattributed);
      report.total.AddSums(total);
      unpriced.insert(total.unpriced_models.begin(), total.unpriced_models.end());
    }
  };
  DayTables& tables_;
  DayTables::Grouping& grouping_;
  DayTables::Selection* selection_ = nullptr;  // nullptr: every row
  bool rows_only_ = false;
  Micros step_us_ = 0;
  std::vector<Step> steps_;
  int days_ = 0;
  report::SumCheck sums_;
  std::vector<std::uint32_t> local_of_key_;  // local id + 1; 0 not met
  std::vector<std::string> local_keys_;
};

}  // namespace gpuledger::ledger
