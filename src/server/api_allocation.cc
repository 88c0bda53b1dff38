#include "server/api_allocation.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/json_writer.h"
#include "common/time_util.h"
#include "report/report.h"
#include "report/report_json.h"
#include "server/api_params.h"
#include "server/opencost_names.h"
#include "server/opencost_params.h"

namespace gpuledger::server {
namespace {

double Units(Nanos n) { return static_cast<double>(n) / kNanosPerUnit; }

double Efficiency(const report::Figures& f) {
  return f.allocated_gpu_us > 0
             ? static_cast<double>(f.compute_gpu_us) / static_cast<double>(f.allocated_gpu_us)
             : 0.0;
}

// One allocation entry, its keys in byte order (as a tree writes them: json_writer.h): exact
// figures beside OpenCost's names and units. Consumer rows (`row` set) carry their compute
// source and its error band, activity (with GPU-hours), share source and the utilization
// class; __idle__ and __unattributed__ have none. `idle`: the __idle__ entry, whose compute is
// the devices' time not busy: used by nobody, so no usage and no efficiency in OpenCost's
// fields (its quotient was above 1).
void WriteAllocationEntry(JsonWriter& w, std::string_view name, const report::Figures& f,
                          Micros from, Micros to, const report::Row* row = nullptr,
                          bool idle = false) {
  const std::string start = FormatRfc3339(from);
  const std::string end = FormatRfc3339(to);
  w.BeginObject();
  if (row != nullptr) {
    w.Key("activity");
    report::WriteActivity(w, f, /*with_gpu_hours=*/true);
  }
  w.Int("allocated_gpu_us", f.allocated_gpu_us);
  if (row != nullptr) report::WriteComputeErrorBand(w, f);
  w.Int("compute_gpu_us", f.compute_gpu_us);
  if (row != nullptr) w.String("compute_source", report::FormatSource(f.quality, f.compute_rule));
  w.Int("cost_nanos", f.cost_nanos);
  w.String("end", end);
  w.Int("energy_mj", f.energy_mj);
  w.Double("gpuCost", Units(f.cost_nanos));
  w.Double("gpuCostAdjustment", 0.0);
  // OpenCost's efficiency: what was used of what was allocated (GPU only here).
  w.Double("gpuEfficiency", idle ? 0.0 : Efficiency(f));
  w.Double("gpuHours", report::GpuHours(f.allocated_gpu_us));
  w.Double("gpuUsageHours", idle ? 0.0 : report::GpuHours(f.compute_gpu_us));
  w.Int("memory_kib_s", f.memory_kib_s);
  w.Double("minutes", static_cast<double>(to - from) / (60.0 * kMicrosPerSecond));
  w.String("name", name);
  w.String("quality", ToString(f.quality));
  if (row != nullptr) w.String("share_source", f.share_source);
  w.String("start", start);
  w.Double("totalCost", Units(f.cost_nanos));
  w.Double("totalEfficiency", idle ? 0.0 : Efficiency(f));
  if (row != nullptr) {
    w.Key("utilization");
    report::WriteUtilization(w, row->utilization);
  }
  w.Key("window");
  w.BeginObject();
  w.String("end", end);
  w.String("start", start);
  w.EndObject();
  w.EndObject();
}

// A step's allocation set: {name: entry}, its rows by key, with "__idle__" (unless
// `include_idle` is false) and "__unattributed__" unless filtered (a tree's order; of a key
// given twice the last, as assigning it twice keeps).
void WriteAllocationSet(JsonWriter& w, const report::Report& r, bool filtered, bool include_idle,
                        std::string_view unattributed = "__unattributed__") {
  std::vector<std::string_view> names;
  names.reserve(r.rows.size() + 2);
  for (const report::Row& row : r.rows) names.push_back(row.key);
  if (!filtered) {
    names.push_back("__idle__");
    names.push_back(unattributed);
  }
  w.BeginObject();
  for (const std::size_t i : KeyOrder(names)) {
    if (!include_idle && i == r.rows.size() && !filtered) continue;  // __idle__
    w.Key(names[i]);
    if (i < r.rows.size()) {
      WriteAllocationEntry(w, names[i], r.rows[i].figures, r.from_us, r.to_us, &r.rows[i]);
    } else {
      const bool idle = i == r.rows.size();
      WriteAllocationEntry(w, names[i], idle ? r.idle : r.unattributed, r.from_us, r.to_us, nullptr,
                           idle);
    }
  }
  w.EndObject();
}

}  // namespace

ApiResponse Allocation(store::LedgerStore& store, ledger::ReadService& reads, const Params& given,
                       bool opencost_names) {
  static const std::vector<std::string_view> kKnown = [] {
    std::vector<std::string_view> known = {"window",    "aggregate",  "step",      "accumulate",
                                           "policy",    "idle",       "filter",    "includeIdle",
                                           "shareIdle", "idleByNode", "resolution"};
    known.insert(known.end(), std::begin(kOpenCostFilterParams), std::end(kOpenCostFilterParams));
    return known;
  }();
  for (const auto& [name, value] : given)
    if (std::find(kKnown.begin(), kKnown.end(), name) == kKnown.end())
      return JsonError(400,
                       fmt::format("unknown parameter '{}' ({})", name, fmt::join(kKnown, ", ")));
  auto opencost = FromOpenCost(given);  // OpenCost's words, with OpenCost's meaning
  if (!opencost) return JsonError(400, opencost.error().message);
  auto query = ParseReportParams(store, opencost->params);
  if (!query) return FromError(query.error());
  const bool filtered = !query->filter.empty();
  query->rows_only = filtered;  // a filtered answer has no idle, unattributed or totals
  auto reports = reads.Reports(store, *query);
  if (!reports) return ReportError(reports.error());
  const std::string unattributed = opencost_names
                                       ? EntryForNone("__unattributed__", query->group_by.size())
                                       : "__unattributed__";
  if (opencost_names)
    for (report::Report& r : *reports)
      r.rows = AsOpenCostEntries(std::move(r.rows), query->group_by, opencost->controller_kind);
  // A filter selects consumers after pricing (each one's cost is what it is in the whole
  // cluster); idle and unattributed belong to no consumer, so a filtered answer has none.
  JsonWriter w;
  w.BeginObject();
  w.Int("code", 200);
  w.Key("data");
  w.BeginArray();
  for (std::size_t i = 0; i < reports->size(); ++i) {
    WriteAllocationSet(w, (*reports)[i], filtered, opencost->include_idle, unattributed);
    if (w.text().size() > kMaxAnswerBytes) return AnswerTooLarge(i + 1, reports->size());
  }
  w.EndArray();
  report::WriteLedgerReach(w, query->window, query->extent);
  w.String("status", "success");
  w.EndObject();
  return {200, "application/json", std::move(w).Take() + "\n"};
}

}  // namespace gpuledger::server
