#pragma once
// What a token cost (issue 63, docs/tokens.md): the GPU cost, time and energy of the pods that
// served an inference engine's tokens, as a chargeback report attributed them under its policy
// and idle handling, joined with the engine's own token counts. Pure: a report by entry and
// token hours in, groups out.
//
// Exactness: a pod's figures go whole to its engine's tokens (split among the models it served
// by their tokens, Apportion), and each part's cost is split between input and output exactly,
// so Σ groups' cost == the cost of the pods that served tokens, and every group's input and
// output cost sum to its cost.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "model/tokens.h"
#include "report/report.h"

namespace gpuledger::report {

// A level of a tokens grouping: the model, or a consumer's dimension (namespace, label:KEY,
// controller, pod, container): where the GPUs were is no level, a pod's tokens are not split by
// the GPUs it ran on.
struct TokenLevel {
  bool model = false;
  Dimension dimension;  // when !model
};
// "model", "namespace", "label:team", "controller", "pod", "container", or several joined by
// commas ("model,label:team"): each at most once. Errors say what is expected.
Result<std::vector<TokenLevel>> ParseTokenGroupBy(std::string_view text);
std::string ToString(const std::vector<TokenLevel>& levels);

// How a group's cost was split between input and output tokens: by the engine's prefill and
// decode time where it reports them, else by the token counts (a token of either kind costs the
// same); "mixed" where its parts differ.
inline constexpr std::string_view kSplitByTime = "prefill-decode-time";
inline constexpr std::string_view kSplitByTokens = "token-count";
inline constexpr std::string_view kSplitMixed = "mixed";

struct TokenGroup {
  std::string key;  // the levels' values joined by '/', as report keys
  std::int64_t input_tokens = 0, output_tokens = 0, requests = 0;
  Micros prefill_us = 0, decode_us = 0;
  // The serving pods' figures, their part for this group: cost, allocated and compute GPU time,
  // energy, and the compute quality and rules the cost rests on.
  Figures gpu;
  Nanos input_cost_nanos = 0, output_cost_nanos = 0;  // gpu.cost_nanos, split
  std::string split;                                  // kSplitByTime, kSplitByTokens, mixed
  std::int64_t tokens() const { return input_tokens + output_tokens; }
};

struct TokenReport {
  Micros from_us = 0, to_us = 0;
  std::vector<TokenLevel> group_by;
  cost::Policy policy;
  cost::IdleHandling idle_handling;
  std::vector<TokenGroup> groups;  // cost descending, then key
  TokenGroup total;                // key "total"
  // Engines (namespace/pod[/container]) whose tokens no GPU row of the window explains: their
  // tokens are counted, at no GPU cost. An engine on CPU, or a pod the agents do not see.
  std::vector<std::string> engines_without_gpu;
};

// The tokens report of `entries` (a report grouped by Dimension::Kind::kEntry over the window:
// every consumer's figures with its metadata) and the token hours of the same window.
TokenReport CostTokens(const Report& entries, std::span<const TokenHour> tokens,
                       const std::vector<TokenLevel>& group_by);

// Exact per-unit figures, rounded half up; nullopt where there is nothing to divide by.
// Nanos of cost per 1M tokens.
std::optional<Nanos> NanosPerMillion(Nanos cost_nanos, std::int64_t tokens);
// GPU-µs (or mJ) per 1,000 tokens.
std::optional<std::int64_t> PerThousand(std::int64_t amount, std::int64_t tokens);
// Tokens per GPU-hour of allocated (or compute) time.
std::optional<std::int64_t> TokensPerGpuHour(std::int64_t tokens, GpuMicros gpu_us);

}  // namespace gpuledger::report
