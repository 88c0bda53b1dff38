// The report's document, written straight to text, against the same document built as nlohmann's
// tree and dumped by JsonText (how it was written until issue 32 measured the tree as most of a
// large answer's time): byte for byte, on random reports whose texts hold every kind of byte.

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/json_text.h"
#include "common/time_util.h"
#include "model/compute_band.h"
#include "report/report_json.h"

namespace gpuledger::report {
namespace {

using nlohmann::json;

// The tree, as report_json.cc built it before the writer: the reference, kept here only.
json TreeFigures(const Figures& f) {
  return {{"allocated_gpu_us", f.allocated_gpu_us},
          {"compute_gpu_us", f.compute_gpu_us},
          {"memory_kib_s", f.memory_kib_s},
          {"energy_mj", f.energy_mj},
          {"cost_nanos", f.cost_nanos},
          {"quality", std::string(ToString(f.quality))}};
}

json TreeActivity(const Figures& f) {
  return {{"sm_active_gpu_us", f.activity.sm_active_us},
          {"sm_occupancy_gpu_us", f.activity.sm_occupancy_us},
          {"tensor_active_gpu_us", f.activity.tensor_active_us},
          {"dram_active_gpu_us", f.activity.dram_active_us},
          {"allocated_gpu_us", f.activity_allocated_gpu_us},
          {"compute_gpu_us", f.activity_compute_gpu_us},
          {"source", FormatSource(f.activity_quality, f.activity_rule)}};
}

json TreeUtilization(const utilization::Classification& c) {
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

json TreeRow(const Row& row, bool with_utilization) {
  json j = TreeFigures(row.figures);
  j["key"] = row.key;
  j["compute_source"] = FormatSource(row.figures.quality, row.figures.compute_rule);
  if (auto band = MeasuredComputeBandOfRules(row.figures.compute_rule)) {
    j["compute_error_band"] = *band;
  } else {
    j["compute_error_band"] = nullptr;
  }
  j["activity"] = TreeActivity(row.figures);
  j["compute_floor_gpu_us"] = row.figures.compute_floor_gpu_us;
  j["granted_memory_kib_s"] = row.figures.granted_memory_kib_s;
  j["share_source"] = row.figures.share_source;
  j["per_device"] = {{"compute_gpu_us", row.figures.naive_compute_gpu_us},
                     {"cost_nanos", row.figures.naive_cost_nanos}};
  if (with_utilization) j["utilization"] = TreeUtilization(row.utilization);
  return j;
}

json TreeReport(const Report& r) {
  json rows = json::array();
  for (const auto& row : r.rows) rows.push_back(TreeRow(row, true));
  json out = {{"window", {{"start", FormatRfc3339(r.from_us)}, {"end", FormatRfc3339(r.to_us)}}},
              {"aggregate", ToString(r.group_by)},
              {"policy", cost::ToString(r.policy)},
              {"idle_handling", cost::ToString(r.idle_handling)},
              {"rows", rows},
              {"idle", TreeFigures(r.idle)},
              {"unattributed", TreeFigures(r.unattributed)},
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

json TreeSteps(const std::vector<Report>& steps) {
  json out = json::array();
  for (const Report& r : steps) {
    json costs = json::object();
    for (const Row& row : r.rows) costs[row.key] = row.figures.cost_nanos;
    costs["__idle__"] = r.idle.cost_nanos;
    costs["__unattributed__"] = r.unattributed.cost_nanos;
    out.push_back({{"start", FormatRfc3339(r.from_us)},
                   {"end", FormatRfc3339(r.to_us)},
                   {"cost_nanos", std::move(costs)}});
  }
  return out;
}

class RandomReports {
 public:
  explicit RandomReports(std::uint64_t seed) : rng_(seed) {}

  Report Next() {
    Report r;
    r.from_us = Time();
    r.to_us = Time();
    const Dimension::Kind kinds[] = {Dimension::Kind::kNamespace, Dimension::Kind::kController,
                                     Dimension::Kind::kNode, Dimension::Kind::kPod};
    r.group_by = {Dimension{kinds[Pick(4)], ""}};
    if (Pick(3) == 0) r.group_by.push_back(Dimension{Dimension::Kind::kLabel, "team"});
    r.policy = cost::Policy{static_cast<cost::PolicyKind>(Pick(4)), static_cast<int>(Pick(1001))};
    r.idle_handling = {static_cast<cost::IdleHandling::Kind>(Pick(3)), Text()};
    const std::size_t rows = Pick(6);
    for (std::size_t i = 0; i < rows; ++i) {
      Row row{Text(), RandomFigures(), {}};
      row.utilization.cls = static_cast<utilization::Class>(Pick(8));
      for (std::size_t s = Pick(5); s > 0; --s)
        row.utilization.signals.emplace_back(Name(), Real());
      for (std::size_t t = Pick(3); t > 0; --t)
        row.utilization.thresholds.emplace_back(Name(), Real());
      row.utilization.basis = Text();
      row.utilization.reason = Text();
      r.rows.push_back(std::move(row));
    }
    r.idle = RandomFigures();
    r.unattributed = RandomFigures();
    r.total = {Int(), Int(), Int(), Int(), static_cast<int>(Pick(100000)), {}};
    for (std::size_t m = Pick(3); m > 0; --m) r.total.unpriced_models.push_back(Text());
    for (std::size_t s = Pick(3); s > 0; --s)
      r.statements.push_back({Text(), static_cast<int>(Pick(9)), Time(), Text()});
    for (std::size_t a = Pick(3); a > 0; --a) {
      Adjustment adjustment{Text(), static_cast<int>(Pick(9)), {}, Int(), Int(), Int()};
      for (std::size_t k = Pick(3); k > 0; --k) adjustment.rows.emplace_back(Text(), Int());
      r.adjustments.push_back(std::move(adjustment));
    }
    return r;
  }

  std::size_t Pick(std::size_t n) { return static_cast<std::size_t>(rng_() % n); }

 private:
  // Keys, labels and reasons as they come: ASCII mostly, and now and then quotes, backslashes,
  // control bytes, UTF-8, bytes that are not UTF-8, and the names the steps' sets use.
  std::string Text() {
    static const std::string kPieces[] = {
        "ml",       "team-a/web",       "\"", "\\",   "\n",  "\x01",    "\x7f", "é", "\xff\xfe",
        "__idle__", "__unattributed__", "",   "Zeta", "a b", "\xe6\x97"};
    std::string s;
    for (std::size_t i = Pick(3) + 1; i > 0; --i) s += kPieces[Pick(std::size(kPieces))];
    return s;
  }
  // Signal names, some given twice (the tree keeps the last value).
  std::string Name() {
    static const char* const kNames[] = {"gpu_util", "sm_active", "dram_active", "busy_util_min",
                                         "é"};
    return kNames[Pick(std::size(kNames))];
  }
  std::int64_t Int() {
    const std::int64_t extremes[] = {0, -1, std::numeric_limits<std::int64_t>::max(),
                                     std::numeric_limits<std::int64_t>::min(),
                                     static_cast<std::int64_t>(rng_() >> 1)};
    return extremes[Pick(std::size(extremes))];
  }
  double Real() {
    switch (Pick(4)) {
      case 0:
        return static_cast<double>(Pick(1001)) / 1000.0;
      case 1:
        return std::numeric_limits<double>::quiet_NaN();
      case 2:
        return static_cast<double>(rng_() >> 11) / 9007199254740992.0 * 1e-6;
      default:
        return static_cast<double>(Pick(100));
    }
  }
  Micros Time() { return static_cast<Micros>(Pick(4'000'000'000)) * 1'000'000; }
  Quality RandomQuality() { return static_cast<Quality>(Pick(4)); }
  std::string Rule() {
    static const char* const kRules[] = {"", "process-samples", "mps-thread-share",
                                         "device-activity", "process-samples+device-activity"};
    return kRules[Pick(std::size(kRules))];
  }
  Figures RandomFigures() {
    Figures f;
    f.allocated_gpu_us = Int();
    f.compute_gpu_us = Int();
    f.memory_kib_s = Int();
    f.energy_mj = Int();
    f.cost_nanos = Int();
    f.quality = RandomQuality();
    f.compute_rule = Rule();
    f.activity = {Int(), Int(), Int(), Int()};
    f.activity_allocated_gpu_us = Int();
    f.activity_compute_gpu_us = Int();
    f.activity_quality = RandomQuality();
    f.activity_rule = Rule();
    f.granted_memory_kib_s = Int();
    f.share_source = Pick(2) == 0 ? "" : Text();
    f.naive_compute_gpu_us = Int();
    f.naive_cost_nanos = Int();
    f.compute_floor_gpu_us = Int();
    return f;
  }

  std::mt19937_64 rng_;
};

TEST(ReportJson, WritesWhatTheTreeWroteForRandomReports) {
  RandomReports random(32);
  for (int trial = 0; trial < 2000; ++trial) {
    const Report r = random.Next();
    ASSERT_EQ(ReportToJson(r), JsonText(TreeReport(r), 2) + "\n") << "trial " << trial;

    std::vector<Report> steps;
    for (std::size_t s = random.Pick(4); s > 0; --s) steps.push_back(random.Next());
    json stepped = TreeReport(r);
    stepped["steps"] = TreeSteps(steps);
    ASSERT_EQ(ReportToJson(r, steps), JsonText(stepped, 2) + "\n") << "trial " << trial;

    JsonWriter line;
    WriteReport(line, r);
    ASSERT_EQ(line.text(), JsonText(TreeReport(r))) << "trial " << trial;
    for (const Row& row : r.rows) {
      json stored = TreeRow(row, /*with_utilization=*/false);
      stored.erase("compute_error_band");
      ASSERT_EQ(StoredRowToJson(row), JsonText(stored)) << "trial " << trial;
    }
  }
}

TEST(ReportJson, WritesGpuHoursBesideEachActivitySignalWhenAsked) {
  Figures f;
  f.activity.sm_active_us = 5'400'000'000;  // 1.5 GPU-hours
  JsonWriter w;
  WriteActivity(w, f, /*with_gpu_hours=*/true);
  const json a = json::parse(w.text());
  EXPECT_EQ(a.at("sm_active_gpu_hours").get<double>(), 1.5);
  EXPECT_EQ(a.at("sm_active_gpu_us").get<std::int64_t>(), 5'400'000'000);
  EXPECT_EQ(a.size(), 11u);
  EXPECT_EQ(JsonText(a), w.text());  // keys in a tree's order
}

}  // namespace
}  // namespace gpuledger::report
