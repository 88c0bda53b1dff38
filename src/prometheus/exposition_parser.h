#pragma once
// A parser for the Prometheus text exposition format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/): the inverse of
// ExpositionWriter, for the server's own scrapes and for exposition files.
//
// One pass over a std::string_view, no regex, no allocation per token beyond the samples it
// returns. It reads what Prometheus's own parser (model/textparse) reads and refuses what it
// refuses, held to that by a differential test (fuzz/differential/; one deliberate difference:
// a NUL byte in a comment does not end the input here). So: `# HELP` / `# TYPE` lines and
// other comments, escaped label values (\\ \" \n unescaped, any other pair kept), optional
// commas in a label set, values as Go's ParseFloat reads them ("+Inf", "-Inf", "NaN",
// exponents), an optional unsigned millisecond timestamp, and histogram/summary series
// (name_bucket{le=...}, name_sum, name_count, quantile=...) as plain samples. Never crashes on
// any input (fuzz/exposition_fuzz.cc).
//
// Malformed lines: in the default strict mode the first one fails the whole parse with
// "line N: expected ..., got ..." (the server uses this for its own agents: a malformed line
// means the scrape is not trusted and the previous state is kept). With `skip_bad_lines` a bad
// line is skipped and counted (bad_lines, first few messages in errors): for third-party
// exporters such as dcgm-exporter.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "prometheus/sample.h"

namespace gpuledger::prometheus {

inline constexpr std::int64_t kNoTimestamp = INT64_MIN;

struct ParseOptions {
  bool skip_bad_lines = false;
  std::size_t max_errors_kept = 10;  // messages kept in Exposition::errors
};

struct Exposition {
  std::vector<Sample> samples;               // in input order; labels sorted by name
  std::vector<std::int64_t> timestamps_ms;   // parallel to samples; kNoTimestamp when absent
  std::map<std::string, std::string> types;  // family name -> "counter", "gauge", ...
  std::int64_t bad_lines = 0;                // only with skip_bad_lines
  std::vector<std::string> errors;           // "line N: ..." for the first bad lines
};

Result<Exposition> ParseExposition(std::string_view text, const ParseOptions& options = {});

}  // namespace gpuledger::prometheus
