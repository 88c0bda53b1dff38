#include "ledger/days_summed.h"

#include <algorithm>
#include <limits>

namespace gpuledger::ledger {
namespace {

// A grouping's name in DayTables' memo.
std::string GroupingName(const std::vector<report::Dimension>& group_by) {
  std::string name;
  for (const report::Dimension& d : group_by) {
    name += std::to_string(static_cast<int>(d.kind));
    name += ':';
    name += d.label;
    name += '\n';
  }
  return name;
}

// Groupings (and filters) whose keys a DayTables keeps: past it they are worked again from the
// first.
constexpr std::size_t kKeptGroupings = 16;

// The memo kept under `name`, made when absent; past kKeptGroupings all are let go (a few are
// asked for again and again; a stream of new ones must not grow without bound).
template <typename T, typename Make>
T& Kept(std::unordered_map<std::string, std::unique_ptr<T>>& kept, std::string name,
        const Make& make) {
  if (auto it = kept.find(name); it != kept.end()) return *it->second;
  if (kept.size() >= kKeptGroupings) kept.clear();
  auto& slot = kept[std::move(name)];
  slot = make();
  return *slot;
}

RowSums SumsOf(const SummedRow& row) {
  const auto& v = row.numbers;
  RowSums s;
  s.present = true;
  s.allocated_us = v[0];
  s.compute_us = v[1];
  s.memory_kib_s = v[2];
  s.energy_mj = v[3];
  s.cost_nanos = v[4];
  s.quality = row.quality;
  s.compute_rule.Add(row.rules[0]);
  s.activity = Activity{v[5], v[6], v[7], v[8]};
  s.activity_allocated_us = v[9];
  s.activity_compute_us = v[10];
  s.activity_quality = row.activity_quality;
  s.activity_rule.Add(row.rules[1]);
  s.granted_memory_kib_s = v[11];
  s.share_source.Add(row.rules[2]);
  s.naive_compute_us = v[12];
  s.naive_cost_nanos = v[13];
  s.compute_floor_us = v[14];
  return s;
}

}  // namespace

void PutNumbers(const std::array<std::int64_t, kSummedNumbers>& v, report::Figures& f) {
  f.allocated_gpu_us = v[0];
  f.compute_gpu_us = v[1];
  f.memory_kib_s = v[2];
  f.energy_mj = v[3];
  f.cost_nanos = v[4];
  f.activity = Activity{v[5], v[6], v[7], v[8]};
  f.activity_allocated_gpu_us = v[9];
  f.activity_compute_gpu_us = v[10];
  f.granted_memory_kib_s = v[11];
  f.naive_compute_gpu_us = v[12];
  f.naive_cost_nanos = v[13];
  f.compute_floor_gpu_us = v[14];
}

std::array<std::int64_t, kSummedNumbers> NumbersOf(const report::Figures& f) {
  return {f.allocated_gpu_us,
          f.compute_gpu_us,
          f.memory_kib_s,
          f.energy_mj,
          f.cost_nanos,
          f.activity.sm_active_us,
          f.activity.sm_occupancy_us,
          f.activity.tensor_active_us,
          f.activity.dram_active_us,
          f.activity_allocated_gpu_us,
          f.activity_compute_gpu_us,
          f.granted_memory_kib_s,
          f.naive_compute_gpu_us,
          f.naive_cost_nanos,
          f.compute_floor_gpu_us};
}

std::uint32_t DayTables::Entry(std::string_view text) {
  if (auto it = entry_ids_.find(text); it != entry_ids_.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(entry_texts_.size());
  auto added = entry_ids_.emplace(std::string(text), id).first;
  entry_texts_.push_back(&added->first);
  return id;
}

std::uint16_t DayTables::Rule(std::string_view text) {
  if (text.empty()) return 0;
  if (auto it = rule_ids_.find(text); it != rule_ids_.end()) return it->second;
  if (rules_.size() > std::numeric_limits<std::uint16_t>::max()) {
    ok_ = false;
    return 0;
  }
  const auto id = static_cast<std::uint16_t>(rules_.size());
  rules_.emplace_back(text);
  rule_ids_.emplace(std::string(text), id);
  return id;
}

DayTables::Grouping& DayTables::GroupingOf(const std::vector<report::Dimension>& group_by) {
  return Kept(groupings_, GroupingName(group_by),
              [&] { return std::make_unique<Grouping>(*this, group_by); });
}

DayTables::Selection& DayTables::SelectionOf(const Filter& filter) {
  return Kept(selections_, FilterKey(filter),
              [&] { return std::make_unique<Selection>(*this, filter); });
}

bool DayTables::Selection::Keeps(std::uint32_t entry) {
  if (entry < keeps_.size() && keeps_[entry] >= 0) return keeps_[entry] == 1;
  // An entry that does not decode (a bug, see KeyOfEntry) is what no filter names.
  const std::optional<report::Entry> decoded = report::DecodeEntry(tables_.entry(entry));
  const bool keeps = decoded && Matches(filter_, decoded->consumer, decoded->placed());
  if (entry >= keeps_.size()) keeps_.resize(tables_.entries(), -1);
  keeps_[entry] = keeps ? 1 : 0;
  return keeps;
}

std::uint32_t DayTables::Grouping::KeyOfEntry(std::uint32_t entry) {
  if (entry < key_of_entry_.size() && key_of_entry_[entry] != 0) return key_of_entry_[entry] - 1;
  // An entry BuildReports wrote (EncodeEntry), kept under gzip's CRC-32: one that does not
  // decode could only be a bug, and shows as its own text rather than vanish.
  const std::string& text = tables_.entry(entry);
  const std::optional<report::Entry> decoded = report::DecodeEntry(text);
  const std::uint32_t key =
      KeyOf(decoded ? report::KeyOf(decoded->consumer, decoded->placed(), group_by_) : text);
  if (entry >= key_of_entry_.size()) key_of_entry_.resize(tables_.entries(), 0);
  key_of_entry_[entry] = key + 1;
  return key;
}

std::uint32_t DayTables::Grouping::KeyOf(std::string_view key) {
  if (auto it = key_ids_.find(key); it != key_ids_.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(keys_.size());
  keys_.emplace_back(key);
  key_ids_.emplace(std::string(key), id);
  return id;
}

SummedDay ToSummedDay(const report::Report& day, const report::SumCheck& sums, DayTables& tables) {
  SummedDay out{.from_us = day.from_us,
                .to_us = day.to_us,
                .idle = day.idle,
                .unattributed = day.unattributed,
                .total = day.total,
                .sums = sums};
  out.rows.reserve(day.rows.size());
  for (const report::Row& row : day.rows) {
    const report::Figures& f = row.figures;
    out.rows.push_back(
        {NumbersOf(f),
         tables.Entry(row.key),
         {tables.Rule(f.compute_rule), tables.Rule(f.activity_rule), tables.Rule(f.share_source)},
         f.quality,
         f.activity_quality});
  }
  return out;
}

DaysSummed::DaysSummed(const ReportQuery& query, DayTables& tables)
    : tables_(tables),
      grouping_(tables.GroupingOf(query.group_by)),
      selection_(query.filter.empty() ? nullptr : &tables.SelectionOf(query.filter)),
      rows_only_(query.rows_only),
      step_us_(StepLength(query)) {
  for (report::Report& heading : StepReports(query)) steps_.push_back({std::move(heading)});
}

DaysSummed::Step& DaysSummed::StepAt(Micros from_us) {
  const auto at = static_cast<std::size_t>(
      std::max<Micros>(from_us - steps_.front().report.from_us, 0) / step_us_);
  return steps_[std::min(at, steps_.size() - 1)];
}

std::uint32_t DaysSummed::Local(std::uint32_t key) {
  if (key >= local_of_key_.size()) local_of_key_.resize(grouping_.keys().size(), 0);
  std::uint32_t& local = local_of_key_[key];
  if (local == 0) {
    local_keys_.push_back(grouping_.keys()[key]);
    local = static_cast<std::uint32_t>(local_keys_.size());
  }
  return local - 1;
}

void DaysSummed::Add(const SummedDay& day) {
  Step& step = StepAt(day.from_us);
  for (const SummedRow& row : day.rows) {
    if (selection_ != nullptr && !selection_->Keeps(row.entry)) continue;
    const std::uint32_t key = Local(grouping_.KeyOfEntry(row.entry));
    if (key >= step.rows.size()) step.rows.resize(local_keys_.size());
    step.rows[key].Merge(SumsOf(row));
  }
  if (!rows_only_) step.AddTotals(day.idle, day.unattributed, day.total);
  sums_.Merge(day.sums);
  ++days_;
}

void DaysSummed::AddGrouped(const report::Report& part) {
  Step& step = StepAt(part.from_us);
  for (const report::Row& row : part.rows) {
    const RowSums sums = RowSums::FromFigures(
        row.figures, [&](const std::string& rule) { return tables_.Rule(rule); });
    const std::uint32_t key = Local(grouping_.KeyOf(row.key));
    if (key >= step.rows.size()) step.rows.resize(local_keys_.size());
    step.rows[key].Merge(sums);
  }
  step.AddTotals(part.idle, part.unattributed, part.total);
  ++days_;
}

std::vector<report::Report> DaysSummed::Finish() {
  std::vector<report::Report> out;
  out.reserve(steps_.size());
  for (Step& step : steps_)
    FinishRows(step.rows, local_keys_, tables_.rules(), step.unpriced,
               out.emplace_back(std::move(step.report)));
  return out;
}

}  // namespace gpuledger::ledger
