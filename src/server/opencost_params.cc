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

}  // namespace

Result<OpenCostRequest> FromOpenCost(Params p) {
  OpenCostRequest out;
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
    if (!kind.empty()) {
      // OpenCost's deployment grouping: each deployment's allocations (the rest unallocated, so
      // left out here, as a filter leaves them).
      const std::string only = fmt::format("controllerKind:\"{}\"", kind);
      const std::string given = Take(p, "filter").value_or("");
      p.emplace("filter", Trim(given).empty() ? only : "(" + given + ")+" + only);
    }
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
  if (auto include = Take(p, "includeIdle")) {
    auto flag = Flag("includeIdle", *include);
    if (!flag) return flag.error();
    out.include_idle = *flag;
  }
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
