#include "report/report_json.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/time_util.h"
#include "common/units.h"
#include "model/compute_band.h"
#include "report/window.h"

namespace gpuledger::report {
namespace {

using nlohmann::json;

void WriteTime(JsonWriter& w, std::string_view key, Micros at) { w.String(key, FormatRfc3339(at)); }

// {"allocated_gpu_us","compute_gpu_us","cost_nanos","energy_mj","memory_kib_s","quality"}:
// idle's and unattributed's figures.
void WriteFigures(JsonWriter& w, const Figures& f) {
  w.BeginObject();
  w.Int("allocated_gpu_us", f.allocated_gpu_us);
  w.Int("compute_gpu_us", f.compute_gpu_us);
  w.Int("cost_nanos", f.cost_nanos);
  w.Int("energy_mj", f.energy_mj);
  w.Int("memory_kib_s", f.memory_kib_s);
  w.String("quality", ToString(f.quality));
  w.EndObject();
}

// A consumer row, its keys in byte order: the figures, their sources, activity, granted memory,
// share source, the per-device method's contrast and (`full`) the error band and classification,
// which a stored row leaves to RowFromJson.
void WriteRow(JsonWriter& w, const Row& row, bool full) {
  const Figures& f = row.figures;
  w.BeginObject();
  w.Key("activity");
  WriteActivity(w, f);
  w.Int("allocated_gpu_us", f.allocated_gpu_us);
  if (full) WriteComputeErrorBand(w, f);
  w.Int("compute_floor_gpu_us", f.compute_floor_gpu_us);
  w.Int("compute_gpu_us", f.compute_gpu_us);
  w.String("compute_source", FormatSource(f.quality, f.compute_rule));
  w.Int("cost_nanos", f.cost_nanos);
  w.Int("energy_mj", f.energy_mj);
  w.Int("granted_memory_kib_s", f.granted_memory_kib_s);
  w.String("key", row.key);
  w.Int("memory_kib_s", f.memory_kib_s);
  w.Key("per_device");
  w.BeginObject();
  w.Int("compute_gpu_us", f.naive_compute_gpu_us);
  w.Int("cost_nanos", f.naive_cost_nanos);
  w.EndObject();
  w.String("quality", ToString(f.quality));
  w.String("share_source", f.share_source);
  if (full) {
    w.Key("utilization");
    WriteUtilization(w, row.utilization);
  }
  w.EndObject();
}

// {name: value} of named values in a tree's order (a name given twice: its last value).
void WriteNamed(JsonWriter& w, const std::vector<std::pair<std::string, double>>& named) {
  std::vector<std::string_view> names;
  names.reserve(named.size());
  for (const auto& [name, value] : named) names.push_back(name);
  w.BeginObject();
  for (const std::size_t i : KeyOrder(names)) w.Double(names[i], named[i].second);
  w.EndObject();
}

// "steps": each step's cost per group, idle's and unattributed's (report_json.h).
void WriteSteps(JsonWriter& w, const std::vector<Report>& steps) {
  w.BeginArray();
  for (const Report& step : steps) {
    std::vector<std::string_view> keys;
    std::vector<Nanos> costs;
    keys.reserve(step.rows.size() + 2);
    costs.reserve(step.rows.size() + 2);
    for (const Row& row : step.rows) {
      keys.push_back(row.key);
      costs.push_back(row.figures.cost_nanos);
    }
    keys.push_back("__idle__");
    costs.push_back(step.idle.cost_nanos);
    keys.push_back("__unattributed__");
    costs.push_back(step.unattributed.cost_nanos);
    w.BeginObject();
    w.Key("cost_nanos");
    w.BeginObject();
    for (const std::size_t i : KeyOrder(keys)) w.Int(keys[i], costs[i]);
    w.EndObject();
    WriteTime(w, "end", step.to_us);
    WriteTime(w, "start", step.from_us);
    w.EndObject();
  }
  w.EndArray();
}

void WriteAdjustments(JsonWriter& w, const std::vector<Adjustment>& adjustments) {
  w.BeginArray();
  for (const Adjustment& a : adjustments) {
    w.BeginObject();
    w.Int("device_cost_nanos", a.device_cost_nanos);
    w.Int("idle_cost_nanos", a.idle_cost_nanos);
    w.String("period", a.period);
    w.Key("rows");
    w.BeginArray();
    for (const auto& [key, cost] : a.rows) {
      w.BeginObject();
      w.Int("cost_nanos", cost);
      w.String("key", key);
      w.EndObject();
    }
    w.EndArray();
    w.Int("unattributed_cost_nanos", a.unattributed_cost_nanos);
    w.Int("version", a.version);
    w.EndObject();
  }
  w.EndArray();
}

void WriteStatements(JsonWriter& w, const std::vector<StatementRef>& statements) {
  w.BeginArray();
  for (const StatementRef& st : statements) {
    w.BeginObject();
    w.String("build", st.build);
    WriteTime(w, "closed_at", st.closed_at_us);
    w.String("period", st.period);
    w.Int("version", st.version);
    w.EndObject();
  }
  w.EndArray();
}

void WriteTotals(JsonWriter& w, const Totals& t) {
  w.BeginObject();
  w.Int("busy_us", t.busy_us);
  w.Int("device_cost_nanos", t.device_cost_nanos);
  w.Int("device_hours", t.device_hours);
  w.Int("metered_us", t.metered_us);
  w.Int("unmetered_us", t.unmetered_us);
  w.Key("unpriced_models");
  w.BeginArray();
  for (const std::string& model : t.unpriced_models) w.String(model);
  w.EndArray();
  w.EndObject();
}

Figures FiguresFrom(const json& j) {
  Figures f;
  f.allocated_gpu_us = j.at("allocated_gpu_us").get<std::int64_t>();
  f.compute_gpu_us = j.at("compute_gpu_us").get<std::int64_t>();
  f.memory_kib_s = j.at("memory_kib_s").get<std::int64_t>();
  f.energy_mj = j.at("energy_mj").get<std::int64_t>();
  f.cost_nanos = j.at("cost_nanos").get<std::int64_t>();
  f.quality = ParseQuality(j.at("quality").get<std::string>()).value_or(Quality::kNone);
  // Activity and granted memory: absent from a server older than them (no activity then).
  if (j.contains("activity")) {
    const json& a = j.at("activity");
    f.activity.sm_active_us = a.at("sm_active_gpu_us").get<std::int64_t>();
    f.activity.sm_occupancy_us = a.at("sm_occupancy_gpu_us").get<std::int64_t>();
    f.activity.tensor_active_us = a.at("tensor_active_gpu_us").get<std::int64_t>();
    f.activity.dram_active_us = a.at("dram_active_gpu_us").get<std::int64_t>();
    f.activity_allocated_gpu_us = a.at("allocated_gpu_us").get<std::int64_t>();
    f.activity_compute_gpu_us = a.at("compute_gpu_us").get<std::int64_t>();
    auto source = ParseSource(a.at("source").get<std::string>());
    if (!source) throw std::invalid_argument(source.error().message);
    f.activity_quality = source->first;
    f.activity_rule = source->second;
  }
  if (j.contains("compute_source")) {
    auto source = ParseSource(j.at("compute_source").get<std::string>());
    if (!source) throw std::invalid_argument(source.error().message);
    f.compute_rule = source->second;
  }
  f.granted_memory_kib_s = j.value("granted_memory_kib_s", std::int64_t{0});
  f.share_source = j.value("share_source", std::string());
  // "naive" in statements closed and servers built before the method had one name.
  for (const char* key : {"per_device", "naive"})
    if (j.contains(key)) {  // absent from a server older than it
      f.naive_compute_gpu_us = j.at(key).at("compute_gpu_us").get<std::int64_t>();
      f.naive_cost_nanos = j.at(key).at("cost_nanos").get<std::int64_t>();
      break;
    }
  // Absent from statements closed and servers built before it: the row's own rule's floor.
  f.compute_floor_gpu_us =
      j.contains("compute_floor_gpu_us")
          ? j.at("compute_floor_gpu_us").get<std::int64_t>()
          : ComputeFloor(f.compute_gpu_us, f.quality, MeasuredComputeBandOfRules(f.compute_rule));
  return f;
}

}  // namespace

double GpuHours(GpuMicros us) { return static_cast<double>(us) / kMicrosPerHour; }

void WriteActivity(JsonWriter& w, const Figures& f, bool with_gpu_hours) {
  // Each signal in GPU-µs, and in GPU-hours when asked for (whose key sorts just before).
  const auto signal = [&](std::string_view hours_key, std::string_view us_key, GpuMicros us) {
    if (with_gpu_hours) w.Double(hours_key, GpuHours(us));
    w.Int(us_key, us);
  };
  w.BeginObject();
  w.Int("allocated_gpu_us", f.activity_allocated_gpu_us);
  w.Int("compute_gpu_us", f.activity_compute_gpu_us);
  signal("dram_active_gpu_hours", "dram_active_gpu_us", f.activity.dram_active_us);
  signal("sm_active_gpu_hours", "sm_active_gpu_us", f.activity.sm_active_us);
  signal("sm_occupancy_gpu_hours", "sm_occupancy_gpu_us", f.activity.sm_occupancy_us);
  w.String("source", FormatSource(f.activity_quality, f.activity_rule));
  signal("tensor_active_gpu_hours", "tensor_active_gpu_us", f.activity.tensor_active_us);
  w.EndObject();
}

void WriteComputeErrorBand(JsonWriter& w, const Figures& f) {
  w.Key("compute_error_band");
  if (auto band = MeasuredComputeBandOfRules(f.compute_rule)) {
    w.Double(*band);
  } else {
    w.Null();
  }
}

void WriteUtilization(JsonWriter& w, const utilization::Classification& c) {
  w.BeginObject();
  w.String("basis", c.basis);
  w.String("class", utilization::ToString(c.cls));
  w.String("reason", c.reason);
  w.Key("signals");
  WriteNamed(w, c.signals);
  w.Key("thresholds");
  WriteNamed(w, c.thresholds);
  w.EndObject();
}

std::string StoredRowToJson(const Row& row) {
  JsonWriter w;
  WriteRow(w, row, /*full=*/false);
  return std::move(w).Take();
}

Result<Row> RowFromJson(const json& row) {
  try {
    Figures f = FiguresFrom(row);
    auto c = utilization::Classify(UtilizationInputs(f));
    return Row{row.at("key").get<std::string>(), std::move(f), std::move(c)};
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("report JSON row: ") + e.what());
  }
}

void WriteReport(JsonWriter& w, const Report& r, const std::vector<Report>* steps) {
  w.BeginObject();
  if (!r.adjustments.empty()) {
    w.Key("adjustments");
    WriteAdjustments(w, r.adjustments);
  }
  w.String("aggregate", ToString(r.group_by));
  w.Key("idle");
  WriteFigures(w, r.idle);
  w.String("idle_handling", cost::ToString(r.idle_handling));
  if (r.ledger) WriteLedgerReach(w, {r.from_us, r.to_us}, *r.ledger);
  w.String("policy", cost::ToString(r.policy));
  w.Key("rows");
  w.BeginArray();
  for (const Row& row : r.rows) WriteRow(w, row, /*full=*/true);
  w.EndArray();
  if (!r.statements.empty()) {
    w.Key("statements");
    WriteStatements(w, r.statements);
  }
  if (steps != nullptr) {
    w.Key("steps");
    WriteSteps(w, *steps);
  }
  w.Key("total");
  WriteTotals(w, r.total);
  w.Key("unattributed");
  WriteFigures(w, r.unattributed);
  w.Key("window");
  w.BeginObject();
  WriteTime(w, "end", r.to_us);
  WriteTime(w, "start", r.from_us);
  w.EndObject();
  w.EndObject();
}

void WriteLedgerReach(JsonWriter& w, const TimeRange& window, const TimeRange& extent) {
  const std::string_view reaches = ReachPast(window, extent);
  if (reaches.empty()) return;
  w.Key("ledger");
  w.BeginObject();
  WriteTime(w, "end", extent.to_us);
  WriteTime(w, "start", extent.from_us);
  w.String("window_reaches", reaches);
  w.EndObject();
}

std::string ReportToJson(const Report& r) {
  JsonWriter w(2);
  WriteReport(w, r);
  return std::move(w).Take() + "\n";
}

std::string ReportToJson(const Report& window, const std::vector<Report>& steps) {
  JsonWriter w(2);
  WriteReport(w, window, &steps);
  return std::move(w).Take() + "\n";
}

Result<Report> ReportFromJson(std::string_view text) {
  try {
    json j = json::parse(text);
    Report r;
    auto from = ParseRfc3339(j.at("window").at("start").get<std::string>());
    auto to = ParseRfc3339(j.at("window").at("end").get<std::string>());
    if (!from || !to) return InvalidArgument("report JSON: bad window");
    r.from_us = *from;
    r.to_us = *to;
    const std::string aggregate = j.at("aggregate").get<std::string>();
    if (aggregate == "entry") {  // a closed statement's body (Dimension::Kind::kEntry)
      r.group_by = {Dimension{Dimension::Kind::kEntry, ""}};
    } else {
      auto by = ParseGroupBy(aggregate);
      if (!by) return by.error();
      r.group_by = *by;
    }
    auto policy = cost::ParsePolicy(j.at("policy").get<std::string>());
    if (!policy) return policy.error();
    r.policy = *policy;
    auto idle = cost::ParseIdleHandling(j.at("idle_handling").get<std::string>());
    if (!idle) return idle.error();
    r.idle_handling = *idle;
    // The classification is derived: recomputed from the figures, as BuildReport computes it.
    for (const auto& row : j.at("rows")) {
      auto read = RowFromJson(row);
      if (!read) return read.error();
      r.rows.push_back(std::move(*read));
    }
    r.idle = FiguresFrom(j.at("idle"));
    r.unattributed = FiguresFrom(j.at("unattributed"));
    if (j.contains("ledger")) {
      auto start = ParseRfc3339(j["ledger"].at("start").get<std::string>());
      auto end = ParseRfc3339(j["ledger"].at("end").get<std::string>());
      if (!start || !end) return InvalidArgument("report JSON: bad ledger");
      r.ledger = TimeRange{*start, *end};
    }
    const json& t = j.at("total");
    r.total.device_cost_nanos = t.at("device_cost_nanos").get<std::int64_t>();
    r.total.metered_us = t.at("metered_us").get<std::int64_t>();
    r.total.unmetered_us = t.at("unmetered_us").get<std::int64_t>();
    r.total.busy_us = t.at("busy_us").get<std::int64_t>();
    r.total.device_hours = t.at("device_hours").get<int>();
    r.total.unpriced_models = t.at("unpriced_models").get<std::vector<std::string>>();
    if (j.contains("adjustments")) {
      for (const json& a : j.at("adjustments")) {
        Adjustment& adjustment = r.adjustments.emplace_back();
        adjustment.period = a.at("period").get<std::string>();
        adjustment.version = a.at("version").get<int>();
        for (const json& row : a.at("rows"))
          adjustment.rows.emplace_back(row.at("key").get<std::string>(),
                                       row.at("cost_nanos").get<std::int64_t>());
        adjustment.idle_cost_nanos = a.at("idle_cost_nanos").get<std::int64_t>();
        adjustment.unattributed_cost_nanos = a.at("unattributed_cost_nanos").get<std::int64_t>();
        adjustment.device_cost_nanos = a.at("device_cost_nanos").get<std::int64_t>();
      }
    }
    if (j.contains("statements")) {
      for (const json& st : j.at("statements")) {
        auto closed = ParseRfc3339(st.at("closed_at").get<std::string>());
        if (!closed) return InvalidArgument("report JSON: bad statement closed_at");
        r.statements.push_back(StatementRef{st.at("period").get<std::string>(),
                                            st.at("version").get<int>(), *closed,
                                            st.at("build").get<std::string>()});
      }
    }
    return r;
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("report JSON: ") + e.what());
  }
}

}  // namespace gpuledger::report
