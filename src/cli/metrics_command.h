#pragma once
// `gpuledger metrics`: the reference of every Prometheus family gpuledger exports, printed from
// the metric table (prometheus/metric_table.h). docs/metrics.md is its markdown output, checked
// by metrics_reference_test.

#include <ostream>
#include <string>

namespace gpuledger::cli {

struct MetricsOptions {
  std::string format = "markdown";  // markdown | names | json
};

// markdown: a page with a short introduction and one table (name, type, labels, exporter,
// help); names: one family name a line; json: an array of {"name", "type", "labels": [...],
// "exporter", "help"}. All in the table's order. Returns the exit code: 0, or 2 for an unknown
// format (said on `err`).
int RunMetrics(const MetricsOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gpuledger::cli
