#include "report/token_costs.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "common/apportion.h"
#include "common/rounding.h"

namespace gpuledger::report {
namespace {

using Kind = Dimension::Kind;

// Whether the consumer `c` is part of the engine the token rows name as `engine`: its container,
// or any container of its pod where the rows name none (and any pod of that name where they name
// no pod UID: a source that knows none).
bool Covers(const ConsumerRef& engine, const ConsumerRef& c) {
  if (engine.namespace_name != c.namespace_name || engine.pod != c.pod) return false;
  if (!engine.pod_uid.str().empty() && engine.pod_uid != c.pod_uid) return false;
  return engine.container.empty() || engine.container == c.container;
}

// What an engine served of one model over the window.
struct Served {
  std::int64_t input = 0, output = 0, requests = 0;
  Micros prefill_us = 0, decode_us = 0;
};

// A consumer of the window: its metadata and its figures summed over its entries.
struct Consumer {
  ConsumerInfo info;
  Figures figures;
};

std::string KeyFor(const std::vector<TokenLevel>& levels, const std::string& model,
                   const ConsumerInfo& engine) {
  static const std::string kNone;
  static const GpuUuid kNoGpu;
  const Placed nowhere{kNone, kNone, kNone, kNoGpu, SharingMode::kExclusive};
  std::string key;
  for (const TokenLevel& level : levels) {
    if (!key.empty()) key += '/';
    key += level.model ? model : KeyOf(engine, LabelsOf(engine), nowhere, {level.dimension});
  }
  return key;
}

void AddPart(TokenGroup& group, const Served& served, const Figures& part, Nanos input_cost,
             Nanos output_cost, std::string_view split) {
  group.input_tokens += served.input;
  group.output_tokens += served.output;
  group.requests += served.requests;
  group.prefill_us += served.prefill_us;
  group.decode_us += served.decode_us;
  group.gpu.Add(part);
  group.input_cost_nanos += input_cost;
  group.output_cost_nanos += output_cost;
  if (group.split.empty())
    group.split = split;
  else if (group.split != split)
    group.split = kSplitMixed;
}

}  // namespace

Result<std::vector<TokenLevel>> ParseTokenGroupBy(std::string_view text) {
  constexpr std::string_view kExpected =
      "expected model, namespace, label:KEY, controller, pod or container, joined by commas";
  std::vector<TokenLevel> levels;
  std::set<std::string> seen;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view part = text.substr(start, comma - start);
    start = comma + 1;
    if (!seen.insert(std::string(part)).second)
      return InvalidArgument(fmt::format("group by '{}': '{}' appears twice", text, part));
    if (part == "model") {
      levels.push_back({.model = true});
      continue;
    }
    auto dims = ParseGroupBy(part);
    const bool consumer_level =
        dims && dims->size() == 1 &&
        ((*dims)[0].kind == Kind::kNamespace || (*dims)[0].kind == Kind::kLabel ||
         (*dims)[0].kind == Kind::kController || (*dims)[0].kind == Kind::kPod ||
         (*dims)[0].kind == Kind::kContainer);
    if (!consumer_level)
      return InvalidArgument(fmt::format("group by '{}': '{}': {}", text, part, kExpected));
    levels.push_back({.dimension = (*dims)[0]});
  }
  return levels;
}

std::string ToString(const std::vector<TokenLevel>& levels) {
  std::string out;
  for (const TokenLevel& level : levels) {
    if (!out.empty()) out += ',';
    out += level.model ? "model" : report::ToString(std::vector<Dimension>{level.dimension});
  }
  return out;
}

TokenReport CostTokens(const Report& entries, std::span<const TokenHour> tokens,
                       const std::vector<TokenLevel>& group_by) {
  TokenReport out;
  out.from_us = entries.from_us;
  out.to_us = entries.to_us;
  out.group_by = group_by;
  out.policy = entries.policy;
  out.idle_handling = entries.idle_handling;

  std::map<ConsumerRef, Consumer> consumers;
  for (const Row& row : entries.rows) {
    auto entry = DecodeEntry(row.key);
    if (!entry) continue;  // not a report by entry: no consumer to join
    Consumer& c = consumers[entry->consumer.ref];
    c.info = entry->consumer;
    c.figures.Add(row.figures);
  }
  // What each engine served, by model.
  std::map<ConsumerRef, std::map<std::string, Served>> engines;
  for (const TokenHour& t : tokens) {
    Served& s = engines[t.consumer][t.model];
    s.input += t.input_tokens;
    s.output += t.output_tokens;
    s.requests += t.requests;
    s.prefill_us += t.prefill_us;
    s.decode_us += t.decode_us;
  }

  std::map<std::string, TokenGroup> groups;
  for (const auto& [engine, models] : engines) {
    Figures gpu;
    ConsumerInfo info;
    bool covered = false;
    // The pod's consumers only: the map is ordered by namespace, then pod.
    for (auto it = consumers.lower_bound(ConsumerRef{engine.namespace_name, engine.pod, {}, ""});
         it != consumers.end() && it->first.namespace_name == engine.namespace_name &&
         it->first.pod == engine.pod;
         ++it) {
      const auto& [ref, c] = *it;
      if (!Covers(engine, ref)) continue;
      gpu.Add(c.figures);
      if (!covered) info = c.info;  // the pod's owner and labels
      covered = true;
    }
    info.ref = engine;  // keyed as the token rows name it (container "" for the whole pod)
    if (!covered)
      out.engines_without_gpu.push_back(engine.namespace_name + "/" + engine.pod +
                                        (engine.container.empty() ? "" : "/" + engine.container));
    // The pod's figures among the models it served, by their tokens.
    std::vector<std::uint64_t> weights;
    for (const auto& [model, s] : models)
      weights.push_back(static_cast<std::uint64_t>(s.input + s.output));
    const auto cost = Apportion(gpu.cost_nanos, weights);
    const auto allocated = Apportion(gpu.allocated_gpu_us, weights);
    const auto compute = Apportion(gpu.compute_gpu_us, weights);
    const auto energy = Apportion(gpu.energy_mj, weights);
    std::size_t i = 0;
    for (const auto& [model, s] : models) {
      Figures part;
      part.cost_nanos = cost[i];
      part.allocated_gpu_us = allocated[i];
      part.compute_gpu_us = compute[i];
      part.energy_mj = energy[i];
      part.quality = gpu.quality;
      part.compute_rule = gpu.compute_rule;
      ++i;
      const bool by_time = s.prefill_us + s.decode_us > 0;
      const std::vector<std::uint64_t> io =
          by_time ? std::vector<std::uint64_t>{static_cast<std::uint64_t>(s.prefill_us),
                                               static_cast<std::uint64_t>(s.decode_us)}
                  : std::vector<std::uint64_t>{static_cast<std::uint64_t>(s.input),
                                               static_cast<std::uint64_t>(s.output)};
      const auto split = Apportion(part.cost_nanos, io);  // neither: all to output (the last)
      const std::string key = KeyFor(group_by, model, info);
      TokenGroup& group = groups[key];
      group.key = key;
      AddPart(group, s, part, split[0], split[1], by_time ? kSplitByTime : kSplitByTokens);
    }
  }
  out.total.key = "total";
  for (auto& [key, group] : groups) {
    AddPart(out.total,
            Served{group.input_tokens, group.output_tokens, group.requests, group.prefill_us,
                   group.decode_us},
            group.gpu, group.input_cost_nanos, group.output_cost_nanos, group.split);
    out.groups.push_back(std::move(group));
  }
  std::sort(out.groups.begin(), out.groups.end(), [](const TokenGroup& a, const TokenGroup& b) {
    return a.gpu.cost_nanos != b.gpu.cost_nanos ? a.gpu.cost_nanos > b.gpu.cost_nanos
                                                : a.key < b.key;
  });
  return out;
}

std::optional<Nanos> NanosPerMillion(Nanos cost_nanos, std::int64_t tokens) {
  if (tokens <= 0) return std::nullopt;
  return RoundHalfUp(static_cast<__int128>(cost_nanos) * 1'000'000, tokens);
}

std::optional<std::int64_t> PerThousand(std::int64_t amount, std::int64_t tokens) {
  if (tokens <= 0) return std::nullopt;
  return RoundHalfUp(static_cast<__int128>(amount) * 1'000, tokens);
}

std::optional<std::int64_t> TokensPerGpuHour(std::int64_t tokens, GpuMicros gpu_us) {
  if (gpu_us <= 0) return std::nullopt;
  return RoundHalfUp(static_cast<__int128>(tokens) * kMicrosPerHour, gpu_us);
}

}  // namespace gpuledger::report
