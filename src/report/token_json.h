#pragma once
// The tokens report as JSON: what `gpuledger tokens --format json` prints and /api/v1/tokens
// returns (docs/tokens.md, docs/api.md).

#include <string>
#include <string_view>

#include "report/token_costs.h"

namespace gpuledger::report {

// {"currency","engines_without_gpu":[...],"group_by","groups":[GROUP...],"idle_handling",
//  "policy","total":GROUP,"window":{"end","start"}}, a GROUP being {"allocated_gpu_us",
//  "compute_gpu_us","compute_source","cost_nanos","decode_us","energy_mj","input_cost_nanos",
//  "input_tokens","key","output_cost_nanos","output_tokens","per_1k_tokens":{"compute_gpu_us",
//  "energy_mj"},"per_million_tokens":{"blended_nanos","input_nanos","output_nanos"},
//  "prefill_us","quality","requests","split","tokens_per_gpu_hour":{"allocated","compute"}}.
// Every figure is an integer (nanos of `currency`, GPU-µs, mJ, tokens); a per-unit figure with
// nothing to divide by is null. Keys in byte order.
std::string TokenReportToJson(const TokenReport& report, std::string_view currency);

}  // namespace gpuledger::report
