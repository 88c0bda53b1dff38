#include "report/report_json.h"

#include <nlohmann/json.hpp>

#include "common/time_util.h"

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

Figures FiguresFrom(const json& j) {
  Figures f;
  f.allocated_gpu_us = j.at("allocated_gpu_us").get<std::int64_t>();
  f.compute_gpu_us = j.at("compute_gpu_us").get<std::int64_t>();
  f.memory_kib_s = j.at("memory_kib_s").get<std::int64_t>();
  f.energy_mj = j.at("energy_mj").get<std::int64_t>();
  f.cost_nanos = j.at("cost_nanos").get<std::int64_t>();
  f.quality = ParseQuality(j.at("quality").get<std::string>()).value_or(Quality::kNone);
  return f;
}

}  // namespace

std::string ReportToJson(const Report& r) {
  json rows = json::array();
  for (const auto& row : r.rows) {
    json j = FiguresJson(row.figures);
    j["key"] = row.key;
    rows.push_back(std::move(j));
  }
  json out = {
      {"window", {{"start", FormatRfc3339(r.from_us)}, {"end", FormatRfc3339(r.to_us)}}},
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
  return out.dump(2) + "\n";
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
    auto by = ParseGroupBy(j.at("aggregate").get<std::string>());
    if (!by) return by.error();
    r.group_by = *by;
    auto policy = cost::ParsePolicy(j.at("policy").get<std::string>());
    if (!policy) return policy.error();
    r.policy = *policy;
    auto idle = cost::ParseIdleHandling(j.at("idle_handling").get<std::string>());
    if (!idle) return idle.error();
    r.idle_handling = *idle;
    for (const auto& row : j.at("rows")) r.rows.push_back(Row{row.at("key").get<std::string>(), FiguresFrom(row)});
    r.idle = FiguresFrom(j.at("idle"));
    r.unattributed = FiguresFrom(j.at("unattributed"));
    const json& t = j.at("total");
    r.total.device_cost_nanos = t.at("device_cost_nanos").get<std::int64_t>();
    r.total.metered_us = t.at("metered_us").get<std::int64_t>();
    r.total.unmetered_us = t.at("unmetered_us").get<std::int64_t>();
    r.total.busy_us = t.at("busy_us").get<std::int64_t>();
    r.total.device_hours = t.at("device_hours").get<int>();
    r.total.unpriced_models = t.at("unpriced_models").get<std::vector<std::string>>();
    return r;
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("report JSON: ") + e.what());
  }
}

}  // namespace gpuledger::report
