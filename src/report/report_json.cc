#include "report/report_json.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/json_text.h"
#include "common/time_util.h"
#include "model/compute_band.h"

namespace gpuledger::report {
namespace {

using nlohmann::json;

json FiguresJson(const Figures& f) {
  return {{"allocated_gpu_us", f.allocated_gpu_us},
          {"compute_gpu_us", f.compute_gpu_us},
          {"memory_kib_s", f.memory_kib_s},
          {"energy_mj", f.energy_mj},
          {"cost_nanos", f.cost_nanos},
          {"quality", std::string(ToString(f.quality))}};
}

}  // namespace

void AddComputeSource(const Figures& f, json& j) {
  j["compute_source"] = FormatSource(f.quality, f.compute_rule);
  // The worst error its rules showed on real hardware (model/compute_band.h); null: unmeasured.
  if (auto band = MeasuredComputeBandOfRules(f.compute_rule)) {
    j["compute_error_band"] = *band;
  } else {
    j["compute_error_band"] = nullptr;
  }
}

namespace {

// A consumer row: the figures, activity, granted memory, share source and classification.
json ConsumerRowJson(const Row& row, bool with_utilization) {
  json j = FiguresJson(row.figures);
  j["key"] = row.key;
  AddComputeSource(row.figures, j);
  j["activity"] = ActivityJson(row.figures);
  j["granted_memory_kib_s"] = row.figures.granted_memory_kib_s;
  j["share_source"] = row.figures.share_source;
  j["naive"] = {{"compute_gpu_us", row.figures.naive_compute_gpu_us},
                {"cost_nanos", row.figures.naive_cost_nanos}};
  if (with_utilization) j["utilization"] = UtilizationJson(row.utilization);
  return j;
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
  if (j.contains("naive")) {  // absent from a server older than it
    f.naive_compute_gpu_us = j.at("naive").at("compute_gpu_us").get<std::int64_t>();
    f.naive_cost_nanos = j.at("naive").at("cost_nanos").get<std::int64_t>();
  }
  return f;
}

}  // namespace

json RowJson(const Row& row, bool with_utilization) {
  return ConsumerRowJson(row, with_utilization);
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

json ActivityJson(const Figures& f) {
  return {{"sm_active_gpu_us", f.activity.sm_active_us},
          {"sm_occupancy_gpu_us", f.activity.sm_occupancy_us},
          {"tensor_active_gpu_us", f.activity.tensor_active_us},
          {"dram_active_gpu_us", f.activity.dram_active_us},
          {"allocated_gpu_us", f.activity_allocated_gpu_us},
          {"compute_gpu_us", f.activity_compute_gpu_us},
          {"source", FormatSource(f.activity_quality, f.activity_rule)}};
}

json UtilizationJson(const utilization::Classification& c) {
  json signals = json::object();
  for (const auto& [name, v] : c.signals) signals[name] = v;
  json thresholds = json::object();
  for (const auto& [name, v] : c.thresholds) thresholds[name] = v;
  return {{"class", std::string(utilization::ToString(c.cls))},
          {"signals", signals},
          {"thresholds", thresholds},
          {"basis", c.basis},
          {"reason", c.reason}};
}

std::string ReportToJson(const Report& r) { return JsonText(ReportJson(r), 2) + "\n"; }

json ReportJson(const Report& r) {
  json rows = json::array();
  for (const auto& row : r.rows) rows.push_back(RowJson(row));
  json out = {{"window", {{"start", FormatRfc3339(r.from_us)}, {"end", FormatRfc3339(r.to_us)}}},
              {"aggregate", ToString(r.group_by)},
              {"policy", cost::ToString(r.policy)},
              {"idle_handling", cost::ToString(r.idle_handling)},
              {"rows", rows},
              {"idle", FiguresJson(r.idle)},
              {"unattributed", FiguresJson(r.unattributed)},
              {"total",
               {{"device_cost_nanos", r.total.device_cost_nanos},
                {"metered_us", r.total.metered_us},
                {"unmetered_us", r.total.unmetered_us},
                {"busy_us", r.total.busy_us},
                {"device_hours", r.total.device_hours},
                {"unpriced_models", r.total.unpriced_models}}}};
  if (!r.adjustments.empty()) {
    json adjustments = json::array();
    for (const Adjustment& a : r.adjustments) {
      json rows = json::array();
      for (const auto& [key, cost] : a.rows) rows.push_back({{"key", key}, {"cost_nanos", cost}});
      adjustments.push_back({{"period", a.period},
                             {"version", a.version},
                             {"rows", rows},
                             {"idle_cost_nanos", a.idle_cost_nanos},
                             {"unattributed_cost_nanos", a.unattributed_cost_nanos},
                             {"device_cost_nanos", a.device_cost_nanos}});
    }
    out["adjustments"] = adjustments;
  }
  if (!r.statements.empty()) {
    json statements = json::array();
    for (const StatementRef& st : r.statements)
      statements.push_back({{"period", st.period},
                            {"version", st.version},
                            {"closed_at", FormatRfc3339(st.closed_at_us)},
                            {"build", st.build}});
    out["statements"] = statements;
  }
  return out;
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
