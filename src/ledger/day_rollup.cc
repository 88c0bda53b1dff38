#include "ledger/day_rollup.h"

#include <algorithm>
#include <array>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "common/varint.h"
#include "http/gzip.h"

namespace gpuledger::ledger {
namespace {

// A kept day inflated: our own bytes, so a bound far above any day (10,000 GPUs keep about
// 10 MB) rather than the network's.
constexpr std::size_t kMaxDayBytes = std::size_t{4} << 30;

// Layout (before gzip): format; the day's first and last hour; the sums' words; the rule texts
// (after the empty one, which is id 0); idle and unattributed figures; the totals and the
// unpriced models; the rows, each its entry key and figures. Figures are their numbers (signed),
// their two qualities (a byte each) and their three rules (ids).

class Encoder {
 public:
  void Figures(const report::Figures& f) {
    for (std::int64_t v : NumbersOf(f)) PutSigned(v, out_);
    out_.push_back(static_cast<char>(f.quality));
    out_.push_back(static_cast<char>(f.activity_quality));
    for (const std::string* rule : {&f.compute_rule, &f.activity_rule, &f.share_source})
      PutUnsigned(rule_ids_.at(*rule), out_);
  }
  // Every rule text of `f`, numbered in the order met (the empty one is 0).
  void LearnRules(const report::Figures& f) {
    for (const std::string* rule : {&f.compute_rule, &f.activity_rule, &f.share_source})
      if (rule_ids_.try_emplace(*rule, rule_ids_.size()).second) rules_.push_back(*rule);
  }
  std::string& out() { return out_; }
  const std::vector<std::string>& rules() const { return rules_; }

 private:
  std::map<std::string, std::size_t> rule_ids_ = {{"", 0}};
  std::vector<std::string> rules_;  // after the empty one
  std::string out_;
};

Quality ReadQuality(VarintReader& r, std::string_view field) {
  const std::uint8_t q = r.Byte(field);
  if (q > static_cast<std::uint8_t>(Quality::kNone)) r.Fail(field, "is not a quality");
  return r.ok() ? static_cast<Quality>(q) : Quality::kNone;
}

}  // namespace

std::string DayRollupKind(const cost::Policy& policy, const cost::IdleHandling& idle) {
  return fmt::format("{} {} {}", kDayRollupFormat, cost::ToString(policy), cost::ToString(idle));
}

bool ReadsDaysSummed(const ReportQuery& query) {
  const bool days_steps = query.step == 0 || (query.step % kMicrosPerDay == 0 &&
                                              query.window.from_us % kMicrosPerDay == 0);
  return days_steps && StepsSumToWindow(query);
}

namespace {

// The day [day_us, day_us + 1 day) as a day is kept: the query's policy and idle handling, every
// row at its finest grain.
ReportQuery DayRollupQuery(const ReportQuery& query, Micros day_us) {
  ReportQuery day;
  day.window = {day_us, day_us + kMicrosPerDay};
  day.group_by = {report::Dimension{report::Dimension::Kind::kEntry, ""}};
  day.policy = query.policy;
  day.idle = query.idle;
  return day;
}

}  // namespace

Result<DayRollup> SumDay(const Snapshot& snapshot, const ReportQuery& query,
                         const Parallelism& parallelism) {
  auto entries =
      BuildReports(snapshot, DayRollupQuery(query, snapshot.range().from_us), parallelism);
  if (!entries) return entries.error();
  return DayRollup{std::move(entries->front()), snapshot.sums()};
}

Result<int> KeepDays(store::LedgerStore& store, const ReportQuery& query, const TimeRange& days,
                     const std::function<bool()>& stop) {
  const std::string kind = DayRollupKind(query.policy, query.idle);
  auto kept = store.KeptDays(kind, days);
  if (!kept) return kept.error();
  const Micros first = (days.from_us + kMicrosPerDay - 1) / kMicrosPerDay * kMicrosPerDay;
  int added = 0;
  for (Micros day = first; day < days.to_us && !stop(); day += kMicrosPerDay) {
    if (std::binary_search(kept->begin(), kept->end(), day)) continue;
    // Read before the day: a write after it means the day may have changed, and is not kept.
    auto generation = store.Generation();
    if (!generation) return generation.error();
    auto snapshot = Snapshot::Load(store, {day, day + kMicrosPerDay});
    if (!snapshot) return snapshot.error();
    if ((*snapshot)->devices().size() == 0) continue;  // nothing recorded that day
    auto summed = SumDay(**snapshot, query);
    if (!summed) return summed.error();
    auto written =
        store.WriteDayRollup(day, kind, *generation, EncodeDayRollup(summed->day, summed->sums));
    if (!written) return written.error();
    if (*written) ++added;
  }
  return added;
}

std::string EncodeDayRollup(const report::Report& day, const report::SumCheck& sums) {
  Encoder e;
  e.LearnRules(day.idle);
  e.LearnRules(day.unattributed);
  for (const report::Row& row : day.rows) e.LearnRules(row.figures);
  std::string& out = e.out();
  PutUnsigned(kDayRollupFormat, out);
  PutSigned(day.from_us, out);
  PutSigned(day.to_us, out);
  for (std::uint64_t word : sums.Words()) PutUnsigned(word, out);
  PutUnsigned(e.rules().size(), out);
  for (const std::string& rule : e.rules()) PutText(rule, out);
  e.Figures(day.idle);
  e.Figures(day.unattributed);
  const report::Totals& t = day.total;
  for (std::int64_t v :
       {t.device_cost_nanos, t.metered_us, t.unmetered_us, t.busy_us, std::int64_t{t.device_hours}})
    PutSigned(v, out);
  PutUnsigned(t.unpriced_models.size(), out);
  for (const std::string& model : t.unpriced_models) PutText(model, out);
  PutUnsigned(day.rows.size(), out);
  for (const report::Row& row : day.rows) {
    PutText(row.key, out);
    e.Figures(row.figures);
  }
  // Fast compression: a day is kept by the report that first reads it, while it waits.
  return http::Gzip(out, http::GzipLevel::kFast);
}

Status DecodeDayRollup(std::string_view kept, DayTables& tables, SummedDay& out,
                       std::string& scratch) {
  scratch.clear();
  out.rows.clear();
  const Status inflated =
      http::GunzipChunks(kept, kMaxDayBytes, [&](std::string_view piece) -> Status {
        scratch.append(piece);
        return Status::Ok();
      });
  if (!inflated) return Internal("a day kept summed: " + inflated.error().message);
  VarintReader r(scratch, "day kept summed");
  if (const std::uint64_t format = r.Unsigned("format"); r.ok() && format != kDayRollupFormat)
    r.Fail("format",
           fmt::format("{} is not {}, the one this build reads", format, kDayRollupFormat));
  out.idle = {};
  out.unattributed = {};
  out.total = {};
  out.from_us = r.Signed("day start");
  out.to_us = r.Signed("day end");
  std::array<std::uint64_t, report::SumCheck::kWords> words{};
  for (std::uint64_t& word : words) word = r.Unsigned("sums");
  // The day's rules by its own ids, and as the tables number them.
  std::vector<std::string_view> rules = {""};
  std::vector<std::uint16_t> rule_ids = {0};
  const std::uint64_t rule_count = r.Unsigned("rule count");
  if (rule_count > r.left()) r.Fail("rule count", "is more than there can be");
  for (std::uint64_t i = 0; r.ok() && i < rule_count; ++i) {
    rules.push_back(r.Text("rule"));
    rule_ids.push_back(tables.Rule(rules.back()));
  }
  auto rule = [&]() -> std::uint16_t {
    const std::uint64_t id = r.Unsigned("rule");
    if (id >= rules.size()) r.Fail("rule", "is not in the day's rules");
    return r.ok() ? static_cast<std::uint16_t>(id) : 0;
  };
  auto numbers = [&](std::array<std::int64_t, kSummedNumbers>& v) {
    for (std::int64_t& n : v) n = r.Signed("figure");
  };
  auto figures = [&](report::Figures& f) {
    std::array<std::int64_t, kSummedNumbers> v{};
    numbers(v);
    PutNumbers(v, f);
    f.quality = ReadQuality(r, "quality");
    f.activity_quality = ReadQuality(r, "activity quality");
    for (std::string* text : {&f.compute_rule, &f.activity_rule, &f.share_source})
      text->assign(rules[rule()]);
  };
  figures(out.idle);
  figures(out.unattributed);
  report::Totals& total = out.total;
  total.device_cost_nanos = r.Signed("device cost");
  total.metered_us = r.Signed("metered");
  total.unmetered_us = r.Signed("unmetered");
  total.busy_us = r.Signed("busy");
  total.device_hours = static_cast<int>(r.Signed("device-hours"));
  const std::uint64_t unpriced_count = r.Unsigned("unpriced models");
  if (unpriced_count > r.left()) r.Fail("unpriced models", "are more than there can be");
  for (std::uint64_t i = 0; r.ok() && i < unpriced_count; ++i)
    total.unpriced_models.emplace_back(r.Text("unpriced model"));
  const std::uint64_t row_count = r.Unsigned("row count");
  if (row_count > r.left()) r.Fail("row count", "is more than there can be");
  out.rows.resize(r.ok() ? row_count : 0);
  for (SummedRow& row : out.rows) {
    row.entry = tables.Entry(r.Text("entry"));
    numbers(row.numbers);
    row.quality = ReadQuality(r, "quality");
    row.activity_quality = ReadQuality(r, "activity quality");
    for (std::uint16_t& id : row.rules) id = rule_ids[rule()];
    if (!r.ok()) break;
  }
  if (r.ok() && !r.AtEnd()) r.Fail("end", "has bytes after the rows");
  if (!r.ok()) {
    out.rows.clear();
    return Internal(r.what());
  }
  out.sums = report::SumCheck::FromWords(words);
  return Status::Ok();
}

}  // namespace gpuledger::ledger
