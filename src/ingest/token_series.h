#pragma once
// The inference engines' series that count tokens, requests and prefill/decode time (issue 63),
// as each engine exposes them on its metrics endpoint; docs/tokens.md cites where each name
// comes from. One table, read by the scrape path and the Prometheus path alike.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/sample.h"

namespace gpuledger::ingest {

// What a series adds to in a TokenHour.
enum class TokenField { kInput, kOutput, kRequests, kPrefill, kDecode };

struct TokenSeries {
  std::string_view name;  // the sample's name as exposed
  std::string_view engine;
  TokenField field;
  bool seconds;  // a time in seconds (booked in µs); else a count
  // Only samples whose label `label` is `value` (TGI's batch durations: method="prefill").
  std::string_view label = {}, value = {};
};

// The engine's process start (prometheus_client's process collector: vLLM, SGLang): a new value
// is a restart.
inline constexpr std::string_view kProcessStart = "process_start_time_seconds";

// The token series `s` is; null for any other sample (or one whose label selects nothing).
const TokenSeries* FindTokenSeries(const Sample& s);
// The model a sample names: its `model_name` label (vLLM, SGLang), else `model` (Triton); ""
// where it names none (TGI).
std::string_view ModelOf(const Sample& s);
// A sample's value as the row's integer: a count as it is, seconds in µs; nullopt for a value
// that is not a counter's (NaN, infinite, negative, or past 2^53, where a double stops counting
// every integer).
std::optional<std::int64_t> TokenCount(const TokenSeries& series, double value);
// Every series name in the table, once (a source that fetches by name queries these).
std::vector<std::string> TokenSeriesNames();

}  // namespace gpuledger::ingest
