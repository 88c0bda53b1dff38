#include "server/opencost_params.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "common/strings.h"
#include "common/time_util.h"

namespace gpuledger::server {
namespace {

// OpenCost's controller kinds as groupings, and its label aliases.
constexpr std::string_view kKinds[] = {"deployment", "statefulset", "daemonset",
                                       "job",        "cronjob",     "replicaset"};
constexpr std::string_view kAliases[] = {"team", "department", "environment", "owner", "product"};

Error Named(std::string_view name, const std::string& message) {
  return InvalidArgument(fmt::format("parameter '{}': {}", name, message));
}

// Takes `name` out of `p`: its value, or nullopt when absent.
std::optional<std::string> Take(Params& p, const std::string& name) {
  auto it = p.find(name);
  if (it == p.end()) return std::nullopt;
  std::string value = it->second;
  p.erase(it);
  return value;
}

Result<bool> Flag(std::string_view name, const std::string& value) {
  if (value == "true") return true;
  if (value == "false") return false;
  return Named(name, fmt::format("'{}': expected true or false", value));
}

// A first-language value as a clause of `field` in the second: a trailing '*' a prefix.
Result<std::string> Clause(std::string_view param, std::string_view field, std::string_view value) {
  if (value.find('"') != std::string_view::npos)
    return Named(param, fmt::format("'{}': a value cannot hold '\"'", value));
  if (value.ends_with('*')) {
    value.remove_suffix(1);
    return fmt::format("{}<~:\"{}\"", field, value);
  }
  return fmt::format("{}:\"{}\"", field, value);
}

// filterControllers' KIND:NAME or NAME, filterLabels' KEY:VALUE.
Result<std::string> PairClause(std::string_view param, std::string_view value) {
  const std::size_t colon = value.find(':');
  if (param == "filterLabels") {
    if (colon == std::string_view::npos || colon == 0)
      return Named(param, fmt::format("'{}': expected KEY:VALUE", value));
    return Clause(param, fmt::format("label[{}]", value.substr(0, colon)), value.substr(colon + 1));
  }
  if (colon == std::string_view::npos) return Clause(param, "controllerName", value);
  auto kind = Clause(param, "controllerKind", value.substr(0, colon));
  if (!kind) return kind;
  auto name = Clause(param, "controllerName", value.substr(colon + 1));
  if (!name) return name;
  return fmt::format("({}+{})", *kind, *name);
}

// OpenCost's first filter parameters taken out of `p`, as one filter of the second language
// ("" for none): any value of a parameter, every parameter.
Result<std::string> FirstFilters(Params& p) {
  static const std::pair<std::string_view, std::string_view> kFields[] = {
      {"filterClusters", "cluster"},     {"filterNodes", "node"},
      {"filterNamespaces", "namespace"}, {"filterPods", "pod"},
      {"filterContainers", "container"}, {"filterControllerKinds", "controllerKind"},
      {"filterControllers", ""},         {"filterLabels", ""}};
  for (std::string_view refused : {"filterServices", "filterAnnotations"})
    if (auto value = Take(p, std::string(refused)); value && !Trim(*value).empty())
      return Named(refused,
                   "gpuledger does not keep pods' services or annotations: filter by "
                   "namespace, controller or label");
  std::string all;
  for (const auto& [param, field] : kFields) {
    const auto value = Take(p, std::string(param));
    if (!value) continue;
    std::string any;
    for (std::size_t start = 0; start <= value->size();) {
      const std::size_t end = std::min(value->find(',', start), value->size());
      const std::string_view v = Trim(std::string_view(*value).substr(start, end - start));
      start = end + 1;
      if (v.empty()) continue;
      auto clause = field.empty() ? PairClause(param, v) : Clause(param, field, v);
      if (!clause) return clause;
      any += (any.empty() ? "" : "|") + *clause;
    }
    if (!any.empty()) all += (all.empty() ? "(" : "+(") + any + ")";
  }
  return all;
}

// `more` joined to the `filter` in `p` by '+'.
void AddFilter(Params& p, const std::string& more) {
  if (more.empty()) return;
  const std::string given = Take(p, "filter").value_or("");
  p.emplace("filter", Trim(given).empty() ? more : "(" + given + ")+" + more);
}

}  // namespace

Result<OpenCostRequest> FromOpenCost(Params p) {
  OpenCostRequest out;
  auto first = FirstFilters(p);
  if (!first) return first.error();
  AddFilter(p, *first);
  if (auto aggregate = Take(p, "aggregate")) {
    std::string groupings;
    std::string kind;  // a controller kind it groups by
    for (std::size_t start = 0; start <= aggregate->size();) {
      const std::size_t end = std::min(aggregate->find(',', start), aggregate->size());
      const std::string_view part = std::string_view(*aggregate).substr(start, end - start);
      start = end + 1;
      std::string mapped(part);
      if (std::find(std::begin(kKinds), std::end(kKinds), part) != std::end(kKinds)) {
        if (!kind.empty() && kind != part)
          return Named("aggregate",
                       fmt::format("'{}' and '{}': one controller kind at a time", kind, part));
        kind = std::string(part);
        mapped = "controller";
      } else if (std::find(std::begin(kAliases), std::end(kAliases), part) != std::end(kAliases)) {
        mapped = "label:" + mapped;
      } else if (part == "controllerKind" || part == "service" || part.starts_with("annotation:")) {
        return Named("aggregate",
                     fmt::format("'{}' is an OpenCost grouping gpuledger does not keep (a GPU "
                                 "ledger records pods' controllers and labels, not services or "
                                 "annotations): aggregate by controller or label:KEY",
                                 part));
      }
      groupings += (groupings.empty() ? "" : ",") + mapped;
    }
    p.emplace("aggregate", groupings);
    // OpenCost's deployment grouping: each deployment's allocations (the rest unallocated, so
    // left out here, as a filter leaves them).
    if (!kind.empty()) AddFilter(p, fmt::format("controllerKind:\"{}\"", kind));
    out.controller_kind = kind;
  }
  if (auto accumulate = Take(p, "accumulate")) {
    if (*accumulate == "true" || *accumulate == "all") {
      p.erase("step");
    } else if (*accumulate == "hour" || *accumulate == "day" || *accumulate == "week") {
      const std::string step = *accumulate == "hour" ? "1h" : *accumulate == "day" ? "1d" : "7d";
      if (auto given = p.find("step"); given != p.end() && given->second != step)
        return Named("accumulate", fmt::format("'{}' means step {}, but step is '{}'", *accumulate,
                                               step, given->second));
      p.erase("step");
      p.emplace("step", step);
    } else if (*accumulate != "false" && !accumulate->empty()) {
      return Named("accumulate",
                   fmt::format("'{}': expected true, false, all, hour, day or week", *accumulate));
    }
  }
  std::optional<bool> include_idle;
  if (auto include = Take(p, "includeIdle")) {
    auto flag = Flag("includeIdle", *include);
    if (!flag) return flag.error();
    include_idle = *flag;
  }
  // Kubecost's idle=true|false is includeIdle; gpuledger's own idle values stay.
  if (auto idle = p.find("idle");
      idle != p.end() && (idle->second == "true" || idle->second == "false")) {
    const bool include = idle->second == "true";
    if (include_idle && *include_idle != include)
      return Named("idle", fmt::format("{}, but includeIdle is {}", idle->second, *include_idle));
    include_idle = include;
    p.erase(idle);
  }
  out.include_idle = include_idle.value_or(true);
  if (auto share = Take(p, "shareIdle")) {
    auto flag = Flag("shareIdle", *share);
    if (!flag) return flag.error();
    const auto idle = p.find("idle");
    if (*flag && idle != p.end() && idle->second != "share")
      return Named("shareIdle", fmt::format("true, but idle is '{}'", idle->second));
    if (!*flag && idle != p.end() && idle->second == "share")
      return Named("shareIdle", "false, but idle is 'share'");
    if (*flag && idle == p.end()) p.emplace("idle", "share");
  }
  if (auto by_node = Take(p, "idleByNode")) {
    auto flag = Flag("idleByNode", *by_node);
    if (!flag) return flag.error();
    if (*flag)
      return Named("idleByNode",
                   "true is not kept: idle is one __idle__ entry (the devices' hours no grant "
                   "held); aggregate=node shows each node's consumers");
  }
  if (auto resolution = Take(p, "resolution")) {
    auto step = ParseDuration(*resolution);
    if (!step || *step <= 0)
      return Named("resolution", fmt::format("'{}': expected a duration (1m, 1h)", *resolution));
  }
  out.params = std::move(p);
  return out;
}

}  // namespace gpuledger::server
