#include "ledger/statements.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/json_text.h"
#include "common/json_writer.h"
#include "common/time_util.h"
#include "http/gzip.h"
#include "ledger/report_request.h"
#include "ledger/snapshot.h"
#include "report/report_json.h"
#include "report/window.h"

namespace gpuledger::ledger {
namespace {

// A statement's body inflated: our own bytes, so a bound far above any month (10,000 GPUs keep
// about 300 MB of JSON) rather than the network's.
constexpr std::size_t kMaxStatementBytes = std::size_t{16} << 30;

// What priced the month, as it stands in the snapshot: per GPU model and pricing class the
// device-hours and the lowest and highest hourly price (as modelled, before any bill), and each
// bill's factor per node-day.
std::string Provenance(const Snapshot& s, const TimeRange& month) {
  struct Prices {
    std::int64_t device_hours = 0;
    Nanos lowest = INT64_MAX;
    Nanos highest = INT64_MIN;
  };
  std::map<std::pair<std::string, std::string>, Prices> prices;
  const auto [first, last] = s.DeviceRange(month.from_us, month.to_us);
  for (std::size_t d = first; d < last; ++d) {
    const DeviceFigures f = s.devices()[d];
    const Placement& p = s.placements()[f.placement];
    const Snapshot::Reconciled* reconciled = s.ReconciledOf(d);
    const Nanos modelled = reconciled != nullptr ? reconciled->modelled_nanos : f.price_nanos;
    Prices& entry = prices[{p.gpu_model, p.pricing_class}];
    ++entry.device_hours;
    entry.lowest = std::min(entry.lowest, modelled);
    entry.highest = std::max(entry.highest, modelled);
  }
  nlohmann::json out = {{"prices", nlohmann::json::array()},
                        {"reconciliations", nlohmann::json::array()}};
  for (const auto& [key, p] : prices)
    out["prices"].push_back({{"gpu_model", key.first},
                             {"pricing_class", key.second},
                             {"device_hours", p.device_hours},
                             {"lowest_price_nanos", p.lowest},
                             {"highest_price_nanos", p.highest}});
  for (const Reconciliation& r : s.reconciliations()) {
    if (r.day_us < month.from_us || r.day_us >= month.to_us) continue;
    out["reconciliations"].push_back({{"node", r.node},
                                      {"day", FormatRfc3339(r.day_us)},
                                      {"factor", r.factor},
                                      {"bill_file", r.bill_file}});
  }
  return JsonText(out);
}

// A statement's body: the report's heading (everything but its rows) on the first line, then a
// row per line, without what ReportFromJson derives (classifications, error bands), so a reader
// regroups a row at a time instead of holding a document of the whole month (at 10,000 GPUs a
// DOM of several GB).
std::string EncodeBody(report::Report fine) {
  const std::vector<report::Row> rows = std::move(fine.rows);
  fine.rows.clear();
  JsonWriter heading;
  report::WriteReport(heading, fine);
  std::string out = std::move(heading).Take();
  for (const report::Row& row : rows) {
    out += '\n';
    out += report::StoredRowToJson(row);
  }
  return out;
}

}  // namespace

Result<Statement> ClosePeriod(store::LedgerStore& store, const CloseRequest& request) {
  const std::optional<TimeRange> month = report::MonthRange(request.period);
  if (!month)
    return InvalidArgument(
        fmt::format("period '{}': expected a month as YYYY-MM (2026-11)", request.period));
  if (request.now_us < month->to_us)
    return InvalidArgument(fmt::format("period {}: the month has not ended (it ends {})",
                                       request.period, FormatRfc3339(month->to_us)));
  ReportQuery q;
  q.window = *month;
  q.group_by = {report::Dimension{report::Dimension::Kind::kEntry, ""}};
  if (Status s = ParseCostRules(request.policy, request.idle, q.policy, q.idle); !s.ok())
    return s.error();

  auto snapshot = Snapshot::Load(store, *month);
  if (!snapshot) return snapshot.error();
  auto reports = BuildReports(**snapshot, q);
  if (!reports) return reports.error();
  Statement st;
  st.period = request.period;
  st.from_us = month->from_us;
  st.to_us = month->to_us;
  st.policy = cost::ToString(q.policy);
  st.idle = cost::ToString(q.idle);
  st.closed_at_us = request.now_us;
  st.build = request.build;
  st.provenance = Provenance(**snapshot, *month);
  st.total_cost_nanos = reports->front().total.device_cost_nanos;
  st.body = http::Gzip(EncodeBody(std::move(reports->front())));
  auto version = store.WriteStatement(st);
  if (!version) return version.error();
  st.version = *version;
  return st;
}

Result<report::Report> StatementReport(const Statement& st,
                                       const std::vector<report::Dimension>& group_by) {
  auto failed = [&](const std::string& what) {
    return Internal(fmt::format("statement {} version {}: {}", st.period, st.version, what));
  };
  // The heading's line, then a row per line, each regrouped as it is read: the body is
  // inflated a piece at a time, never held whole (at 10,000 GPUs, 330 MB of text).
  std::optional<report::Report> heading;
  std::map<std::string, report::Figures> rows;
  auto on_line = [&](std::string_view line) -> Status {
    if (!heading) {
      auto parsed = report::ReportFromJson(line);
      if (!parsed) return parsed.error();
      if (!parsed->rows.empty()) return Internal("its heading carries rows: not a statement body");
      heading = std::move(*parsed);
      return Status::Ok();
    }
    const nlohmann::json parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    auto row = report::RowFromJson(parsed);
    if (!row) return row.error();
    auto entry = report::DecodeEntry(row->key);
    if (!entry) return Internal("a row key is not an entry");
    rows[report::KeyOf(entry->consumer, entry->placed(), group_by)].Add(row->figures);
    return Status::Ok();
  };
  const Status read = http::GunzipLines(st.body, kMaxStatementBytes, on_line);
  if (!read) return failed(read.error().message);
  if (!heading) return failed("its body is empty");
  report::Report out = std::move(*heading);
  out.group_by = group_by;
  out.rows.clear();
  for (auto& [key, f] : rows)
    out.rows.push_back(report::Row{key, f, utilization::Classify(report::UtilizationInputs(f))});
  report::SortRows(out.rows);
  out.statements = {report::StatementRef{st.period, st.version, st.closed_at_us, st.build}};
  return out;
}

namespace {

// "2026-12" -> "2027-01".
std::string NextMonth(const std::string& month) {
  const TimeRange range = *report::MonthRange(month);
  const CivilDate next = CivilFromDays(range.to_us / kMicrosPerDay);
  return fmt::format("{:04}-{:02}", next.year, next.month);
}

// The months a window is made of, when it is whole UTC months; else none.
std::vector<std::string> MonthsOf(const TimeRange& window) {
  constexpr std::size_t kMaxMonths = 1200;
  std::vector<std::string> months;
  Micros cursor = window.from_us;
  while (cursor >= 0 && cursor < window.to_us && months.size() < kMaxMonths) {
    if (cursor % kMicrosPerDay != 0) return {};
    const CivilDate day = CivilFromDays(cursor / kMicrosPerDay);
    std::string month = fmt::format("{:04}-{:02}", day.year, day.month);
    const TimeRange range = *report::MonthRange(month);
    if (range.from_us != cursor || range.to_us > window.to_us) return {};
    months.push_back(std::move(month));
    cursor = range.to_us;
  }
  if (cursor != window.to_us) return {};
  return months;
}

// The latest statement (heading) of each month closed with the query's policy and idle handling.
Result<std::map<std::string, Statement>> LatestStatements(store::LedgerStore& store,
                                                          const ReportQuery& q) {
  auto statements = store.ReadStatements("");
  if (!statements) return statements.error();
  const std::string policy = cost::ToString(q.policy);
  const std::string idle = cost::ToString(q.idle);
  std::map<std::string, Statement> latest;
  for (Statement& st : *statements)  // in version order
    if (st.policy == policy && st.idle == idle) latest[st.period] = std::move(st);
  return latest;
}

// The month's statement of `heading`'s version, regrouped as the query.
Result<report::Report> ReadStatementReport(store::LedgerStore& store, const Statement& heading,
                                           const ReportQuery& q) {
  auto body = store.ReadStatementBody(heading);
  if (!body) return body.error();
  Statement whole = heading;
  whole.body = std::move(*body);
  return StatementReport(whole, q.group_by);
}

Result<Nanos> Less(Nanos live, Nanos booked, const std::string& what) {
  Nanos out = 0;
  if (__builtin_sub_overflow(live, booked, &out))
    return InvalidArgument(fmt::format("{}: the adjustment does not fit in 64 bits", what));
  return out;
}

}  // namespace

Result<std::optional<report::Report>> PeriodReport(store::LedgerStore& store, const ReportQuery& q,
                                                   const LiveReports& live) {
  const std::vector<std::string> months = MonthsOf(q.window);
  if (months.empty() || q.step != 0 || !q.filter.empty()) return std::optional<report::Report>();
  auto latest = LatestStatements(store, q);
  if (!latest) return latest.error();
  if (std::none_of(months.begin(), months.end(),
                   [&](const std::string& m) { return latest->contains(m); }))
    return std::optional<report::Report>();

  report::Report out;
  out.from_us = q.window.from_us;
  out.to_us = q.window.to_us;
  out.group_by = q.group_by;
  out.policy = q.policy;
  out.idle_handling = q.idle;
  std::map<std::string, report::Figures> rows;
  std::set<std::string> unpriced;
  for (std::size_t i = 0, end = 0; i < months.size(); i = end) {
    const auto closed = latest->find(months[i]);
    // A closed month alone, or a run of open months read live as one window.
    end = i + 1;
    while (closed == latest->end() && end < months.size() && !latest->contains(months[end])) ++end;
    ReportQuery open = q;
    open.window = {report::MonthRange(months[i])->from_us,
                   report::MonthRange(months[end - 1])->to_us};
    auto part =
        closed != latest->end() ? ReadStatementReport(store, closed->second, q) : live(open);
    if (!part) return part.error();
    for (const report::Row& row : part->rows) rows[row.key].Add(row.figures);
    out.idle.Add(part->idle);
    out.unattributed.Add(part->unattributed);
    out.total.AddSums(part->total);
    unpriced.insert(part->total.unpriced_models.begin(), part->total.unpriced_models.end());
    out.statements.insert(out.statements.end(), part->statements.begin(), part->statements.end());
  }
  for (auto& [key, f] : rows)
    out.rows.push_back(report::Row{key, f, utilization::Classify(report::UtilizationInputs(f))});
  report::SortRows(out.rows);
  out.total.unpriced_models.assign(unpriced.begin(), unpriced.end());
  return std::optional<report::Report>(std::move(out));
}

Status AddAdjustments(store::LedgerStore& store, const ReportQuery& q, const LiveReports& live,
                      report::Report& out) {
  const std::vector<std::string> months = MonthsOf(q.window);
  if (months.empty() || q.step != 0 || !q.filter.empty()) return Status::Ok();
  auto latest = LatestStatements(store, q);
  if (!latest) return latest.error();
  for (const auto& [period, booked] : *latest) {
    if (period >= months.back()) break;
    std::string next = NextMonth(period);
    while (latest->contains(next)) next = NextMonth(next);
    // Carried by the window's open month that is its first, else by another report.
    if (std::find(months.begin(), months.end(), next) == months.end()) continue;

    ReportQuery closed = q;
    closed.window = *report::MonthRange(period);
    auto now = live(closed);
    if (!now) return now.error();
    auto then = ReadStatementReport(store, booked, q);
    if (!then) return then.error();

    std::map<std::string, std::pair<Nanos, Nanos>> costs;  // key -> (live, booked)
    for (const report::Row& row : now->rows) costs[row.key].first = row.figures.cost_nanos;
    for (const report::Row& row : then->rows) costs[row.key].second = row.figures.cost_nanos;
    report::Adjustment a;
    a.period = period;
    a.version = booked.version;
    const std::string what = "adjustment for " + period;
    for (const auto& [key, cost] : costs) {
      auto delta = Less(cost.first, cost.second, what);
      if (!delta) return delta.error();
      if (*delta != 0) a.rows.emplace_back(key, *delta);
    }
    auto idle_delta = Less(now->idle.cost_nanos, then->idle.cost_nanos, what);
    auto unattributed_delta =
        Less(now->unattributed.cost_nanos, then->unattributed.cost_nanos, what);
    auto device_delta = Less(now->total.device_cost_nanos, then->total.device_cost_nanos, what);
    if (!idle_delta) return idle_delta.error();
    if (!unattributed_delta) return unattributed_delta.error();
    if (!device_delta) return device_delta.error();
    a.idle_cost_nanos = *idle_delta;
    a.unattributed_cost_nanos = *unattributed_delta;
    a.device_cost_nanos = *device_delta;
    out.adjustments.push_back(std::move(a));
  }
  return Status::Ok();
}

Result<report::Report> ReportOfWindow(store::LedgerStore& store, const ReportQuery& query,
                                      const LiveReports& live) {
  auto closed = PeriodReport(store, query, live);
  if (!closed) return closed.error();
  auto r = *closed ? Result<report::Report>(std::move(**closed)) : live(query);
  if (!r) return r;
  // An open month after closed ones carries their late data.
  if (Status s = AddAdjustments(store, query, live, *r); !s) return s.error();
  if (!report::ReachPast({r->from_us, r->to_us}, query.extent).empty()) r->ledger = query.extent;
  return r;
}

}  // namespace gpuledger::ledger
