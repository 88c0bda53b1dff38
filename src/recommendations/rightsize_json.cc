#include "recommendations/rightsize_json.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common/json_text.h"
#include "common/money.h"
#include "common/text_columns.h"
#include "common/time_util.h"

namespace gpuledger::recommendations {
namespace {

using json = nlohmann::json;

// The target a recommendation names, as a person reads it: "2 GPUs", "1g.10gb", "1/4", "L4".
std::string Target(const rightsizing::Recommendation& r) {
  return r.action == rightsizing::Action::kKeep ? "unchanged" : r.target;
}

// What the replay found: {"hours", "misfit_hours", "memory_hours", "compute_hours",
// "gpus_hours", "allowed_hours", "risky", "cost_before_nanos", "cost_after_nanos"}; null for
// keep (nothing moves).
json ReplayJson(const rightsizing::Recommendation& r) {
  if (!r.replay) return nullptr;
  const rightsizing::Replayed& p = *r.replay;
  return {{"hours", p.hours},
          {"misfit_hours", p.misfit_hours},
          {"memory_hours", p.memory_hours},
          {"compute_hours", p.compute_hours},
          {"gpus_hours", p.gpus_hours},
          {"allowed_hours", p.allowed_hours},
          {"risky", p.risky()},
          {"cost_before_nanos", p.cost_before_nanos},
          {"cost_after_nanos", p.cost_after_nanos}};
}

// Where a release's evidence is: the idle-allocation findings of its workload over the same
// window, as the API and the CLI ask for them (null for other actions), linked by the
// workload's key, which each of those findings names (`workload`). The finding is the
// guardrail's own, per pod: its subject is one of the workload's pods.
json EvidenceJson(const WorkloadAdvice& a, const rightsizing::Recommendation& r,
                  const TimeRange& window) {
  if (r.action != rightsizing::Action::kRelease) return nullptr;
  const std::string since =
      fmt::format("{},{}", FormatRfc3339(window.from_us), FormatRfc3339(window.to_us));
  const std::string& workload = a.summary.usage.workload;
  return {{"finding_kind", "idle-allocation"},
          {"workload", workload},
          {"api", fmt::format("/api/v1/findings?kind=idle-allocation&workload={}&window={}",
                              workload, since)},
          {"cli", fmt::format("gpuledger audit --kind idle-allocation --workload {} --since {}",
                              workload, since)}};
}

json RecommendationJson(const WorkloadAdvice& a, const TimeRange& window) {
  const rightsizing::Recommendation& best = a.ranked.front();
  json alternatives = json::array();
  for (std::size_t i = 1; i < a.ranked.size(); ++i) {
    const rightsizing::Recommendation& r = a.ranked[i];
    alternatives.push_back({{"action", ToString(r.action)},
                            {"gpu_model", r.gpu_model},
                            {"to", Target(r)},
                            {"monthly_saving_nanos", r.monthly_saving_nanos},
                            {"confidence", r.confidence},
                            {"replay", ReplayJson(r)}});
  }
  return {{"workload", a.summary.usage.workload},
          {"namespace", a.summary.namespace_name},
          {"pricing_class", a.summary.pricing_class},
          {"action", ToString(best.action)},
          {"gpu_model", best.gpu_model},
          {"current_gpu_model", a.summary.usage.gpu_model},
          {"from", FormatGpus(a.summary.usage.gpus_held_ppd) + " " + a.summary.usage.gpu_model},
          {"to", Target(best)},
          {"monthly_saving_nanos", best.monthly_saving_nanos},
          {"gpus_held_ppd", a.summary.usage.gpus_held_ppd},
          {"recommended_ppd", best.recommended_ppd},
          {"gpu_hourly_price_nanos", a.summary.usage.hourly_price_nanos},
          {"memory_peak_bytes", a.summary.usage.memory_peak_bytes},
          {"gpus_used", a.summary.usage.gpus_used},
          {"current_hourly_nanos", best.current_hourly_nanos},
          {"recommended_hourly_nanos", best.recommended_hourly_nanos},
          {"confidence", best.confidence},
          {"reasons", best.reasons},
          {"replay", ReplayJson(best)},
          {"evidence", EvidenceJson(a, best, window)},
          {"utilization", utilization::ToString(a.summary.utilization.cls)},
          {"compute_basis", a.summary.compute_basis},
          {"memory_basis", a.summary.memory_basis},
          {"alternatives", alternatives}};
}

json PlanJson(const rightsizing::ConsolidationPlan& p) {
  json moves = json::array();
  for (const rightsizing::Move& m : p.moves)
    moves.push_back({{"workload", m.workload}, {"to_gpu", m.target_gpu}, {"profile", m.profile}});
  return {{"gpu_model", p.gpu_model},
          {"pool", p.pool},
          {"gpus_now", static_cast<double>(p.gpus_before_ppd) / static_cast<double>(kWholeGpu)},
          {"gpus_now_ppd", p.gpus_before_ppd},
          {"gpus_after", p.gpus_after},
          {"monthly_saving_nanos", p.monthly_saving_nanos},
          {"moves", moves},
          {"optimal", p.optimal},
          {"left_alone", p.left_alone},
          {"reasons", p.reasons}};
}

// A column of at most `width` characters: longer text is cut with "~".

}  // namespace

std::string RightsizeToJson(const RightsizeAnswer& answer) {
  json recommendations = json::array();
  for (const WorkloadAdvice& a : answer.plan.workloads)
    if (!a.ranked.empty()) recommendations.push_back(RecommendationJson(a, answer.window));
  json consolidation = json::array();
  for (const auto& p : answer.plan.consolidation) consolidation.push_back(PlanJson(p));
  const json doc = {{"window",
                     {{"start", FormatRfc3339(answer.window.from_us)},
                      {"end", FormatRfc3339(answer.window.to_us)}}},
                    {"percentile", answer.percentile},
                    {"headroom", answer.headroom},
                    {"recommendations", recommendations},
                    {"consolidation", consolidation},
                    {"total_monthly_saving_nanos", answer.plan.total_monthly_saving_nanos},
                    {"total_basis", answer.plan.total_basis}};
  return JsonText(doc, 2) + "\n";
}

Result<std::string> RightsizeTableFromJson(std::string_view text, std::size_t columns) {
  try {
    const json doc = json::parse(text);
    std::string out =
        Wrap(fmt::format("{} .. {}   compute at {}, memory x {} headroom; savings a month (730 h)",
                         doc.at("window").at("start").get<std::string>(),
                         doc.at("window").at("end").get<std::string>(),
                         doc.at("percentile").get<std::string>(), doc.at("headroom").get<double>()),
             "", columns);
    out += "\n";
    // One line a workload where the terminal is wide enough for its longest name; else the
    // name on a line of its own, its figures indented beneath (wrapped by design, never cut).
    struct Line {
      std::string workload, action, from, to, saving, fit, confidence;
    };
    std::vector<Line> lines;
    std::size_t name_width = DisplayWidth("workload"), confidence_width = 10;
    for (const json& r : doc.at("recommendations")) {
      // The replay: hours it would have fit of those it held ("-" for keep).
      const json& replay = r.at("replay");
      const std::string fit = replay.is_null()
                                  ? "-"
                                  : fmt::format("{}/{}",
                                                replay.at("hours").get<std::int64_t>() -
                                                    replay.at("misfit_hours").get<std::int64_t>(),
                                                replay.at("hours").get<std::int64_t>());
      lines.push_back({r.at("workload").get<std::string>(), r.at("action").get<std::string>(),
                       r.at("from").get<std::string>(), r.at("to").get<std::string>(),
                       DisplayMoney(r.at("monthly_saving_nanos").get<Nanos>()), fit,
                       r.at("confidence").get<std::string>()});
      name_width = std::max(name_width, DisplayWidth(lines.back().workload));
      confidence_width = std::max(confidence_width, DisplayWidth(lines.back().confidence));
    }
    // action, from, to, saving, fit hours and their separators.
    constexpr std::size_t kFigures = 13 + 1 + 18 + 1 + 10 + 1 + 12 + 1 + 9 + 2;
    const bool one_line = name_width + 1 + kFigures + confidence_width <= columns;
    const std::string indent = one_line ? PadRight("", name_width + 1) : "  ";
    const std::size_t confidence_room =
        std::max<std::size_t>(columns - std::min(columns, indent.size() + kFigures), 6);
    auto figures = [&](const Line& l) {
      std::string text = fmt::format(
          "{} {} {} {} {}  {}", PadRight(l.action, 13), PadRight(l.from, 18), PadRight(l.to, 10),
          PadLeft(l.saving, 12), PadLeft(l.fit, 9), Ellipsize(l.confidence, confidence_room));
      while (!text.empty() && text.back() == ' ') text.pop_back();
      return text;
    };
    const Line head{"workload", "action", "from", "to", "saving/month", "fit hours", "confidence"};
    if (one_line) {
      out += PadRight(head.workload, name_width) + " " + figures(head) + "\n";
      for (const Line& l : lines) out += PadRight(l.workload, name_width) + " " + figures(l) + "\n";
    } else {
      out += "workload\n" + indent + figures(head) + "\n";
      for (const Line& l : lines)
        out += Ellipsize(l.workload, columns) + "\n" + indent + figures(l) + "\n";
    }
    if (doc.at("recommendations").empty()) out += "(no workload held a GPU in the window)\n";
    for (const json& p : doc.at("consolidation")) {
      out +=
          "\n" + Wrap(fmt::format(
                          "consolidate {} in pool '{}': {:.2f} GPUs held -> {} GPU{} ({}), saving "
                          "{} a month",
                          p.at("gpu_model").get<std::string>(), p.at("pool").get<std::string>(),
                          p.at("gpus_now").get<double>(), p.at("gpus_after").get<int>(),
                          p.at("gpus_after").get<int>() == 1 ? "" : "s",
                          p.at("optimal").get<bool>() ? "optimal" : "first-fit, not proven optimal",
                          DisplayMoney(p.at("monthly_saving_nanos").get<Nanos>())),
                      "", columns);
      for (const json& m : p.at("moves")) {
        const std::string profile = m.at("profile").get<std::string>();
        out += Wrap(fmt::format("{} -> GPU {}{}", m.at("workload").get<std::string>(),
                                m.at("to_gpu").get<int>(), profile.empty() ? "" : " as " + profile),
                    "  ", columns);
      }
    }
    out += "\n" + Wrap(fmt::format("total saving a month: {}  ({})",
                                   DisplayMoney(doc.at("total_monthly_saving_nanos").get<Nanos>()),
                                   doc.at("total_basis").get<std::string>()),
                       "", columns);
    return out;
  } catch (const std::exception& e) {
    return InvalidArgument(fmt::format("not a rightsizing document: {}", e.what()));
  }
}

}  // namespace gpuledger::recommendations
