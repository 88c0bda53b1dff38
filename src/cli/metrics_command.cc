#include "cli/metrics_command.h"

#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/json_text.h"
#include "prometheus/metric_table.h"

namespace gpuledger::cli {
namespace {

using prometheus::MetricDef;

// `text` for a markdown table cell: a '|' would end the cell.
std::string Cell(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

// The page's introduction: what the table is, where it comes from, how to read it.
constexpr std::string_view kIntro = R"(# Metrics

Every Prometheus family gpuledger exports, one a row. This page is generated from the metric table
in the code (`src/prometheus/metric_table.h`); do not edit it by hand, regenerate it with

    ./build/src/cmd/gpuledger metrics --format markdown > docs/metrics.md

(`metrics_reference_test` fails while it differs; `--format json` and `--format names` give the
same table for programs).

*exporter* is whose `/metrics` carries the family: `agent` (the node agent), `server` (the
server's API listener), `server, webhook` (the admission webhook's own listener, and the server's
`/metrics` as well when the server runs the webhook, `--webhook`). *labels* are in the order the
samples carry them; a histogram's `_bucket` series carry `le` besides. Counters are named with
their `_total` suffix.

| name | type | labels | exporter | help |
|---|---|---|---|---|
)";

std::string Markdown() {
  std::string out(kIntro);
  for (const MetricDef& def : prometheus::MetricTable()) {
    std::string labels;
    for (const std::string& label : prometheus::SplitNames(def.labels))
      labels += fmt::format("{}`{}`", labels.empty() ? "" : ", ", label);
    out += fmt::format("| `{}` | {} | {} | {} | {} |\n", def.name,
                       prometheus::MetricTypeName(def.type), labels, def.exporter, Cell(def.help));
  }
  return out;
}

std::string Names() {
  std::string out;
  for (const MetricDef& def : prometheus::MetricTable()) {
    out += def.name;
    out += '\n';
  }
  return out;
}

std::string Json() {
  nlohmann::json doc = nlohmann::json::array();
  for (const MetricDef& def : prometheus::MetricTable())
    doc.push_back({{"name", def.name},
                   {"type", prometheus::MetricTypeName(def.type)},
                   {"labels", prometheus::SplitNames(def.labels)},
                   {"exporter", def.exporter},
                   {"help", def.help}});
  return JsonText(doc, 2) + "\n";
}

}  // namespace

int RunMetrics(const MetricsOptions& options, std::ostream& out, std::ostream& err) {
  if (options.format == "markdown") {
    out << Markdown();
  } else if (options.format == "names") {
    out << Names();
  } else if (options.format == "json") {
    out << Json();
  } else {
    err << "error: --format: expected markdown, names or json, got '" << options.format << "'\n";
    return 2;
  }
  return 0;
}

}  // namespace gpuledger::cli
