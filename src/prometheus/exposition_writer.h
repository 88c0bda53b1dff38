#pragma once
// A builder for the Prometheus text exposition format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/).
// The agent renders a whole exposition once per collection cycle; /metrics only copies it
// (design section 6), so this favours simplicity and a single buffer over incremental updates.
//
// Usage (gpuledger's own families are declared in prometheus/metric_table.h):
//   ExpositionWriter w;
//   w.Family(kDeviceBusySecondsTotal);
//   w.Sample(kDeviceBusySecondsTotal.name, {{"gpu_uuid", uuid}}, 12.5);
//   std::string text = w.Take();
//
// Metric and label *names* are chosen by code: an invalid one, a sample outside its family, a
// family declared twice or a malformed histogram is a broken invariant and aborts with a message.
// Label *values* and HELP text come from data and are escaped (and invalid UTF-8 replaced by
// U+FFFD), so any value is safe. Not thread-safe; one writer per rendering.

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

namespace gpuledger::prometheus {

enum class MetricType { kCounter, kGauge, kHistogram, kUntyped };

// "counter", "gauge", "histogram", "untyped": the word of a "# TYPE" line.
std::string_view MetricTypeName(MetricType type);

struct MetricDef;  // prometheus/metric_table.h

// One label: name, value.
using Label = std::pair<std::string_view, std::string_view>;

// A histogram's state: per-bucket (not cumulative) counts. counts.size() must be
// upper_bounds.size() + 1; the last count is the overflow bucket above the largest bound (+Inf).
// upper_bounds are finite and strictly increasing.
struct HistogramData {
  std::vector<double> upper_bounds;
  std::vector<std::uint64_t> counts;
  double sum = 0;
};

class ExpositionWriter {
 public:
  // Starts a metric family: "# HELP" and "# TYPE" lines. Counters are named with their
  // "_total" suffix here and in Sample (the 0.0.4 convention promtool checks).
  void Family(std::string_view name, std::string_view help, MetricType type);
  // The same for one of the table's families (its name, help and type).
  void Family(const MetricDef& def);

  // One sample of the current family. `name` is the family name, or for a histogram one of
  // name + "_bucket" / "_sum" / "_count" (prefer Histogram()).
  void Sample(std::string_view name, std::span<const Label> labels, double value);
  void Sample(std::string_view name, std::initializer_list<Label> labels, double value) {
    Sample(name, std::span<const Label>(labels.begin(), labels.size()), value);
  }
  void Sample(std::string_view name, double value) {
    Sample(name, std::span<const Label>(), value);
  }

  // All series of one histogram of the current family (a kHistogram family named `name`):
  // cumulative name_bucket{...,le="<bound>"} lines ending with le="+Inf", then name_sum and
  // name_count. `labels` must not contain "le".
  void Histogram(std::string_view name, std::span<const Label> labels, const HistogramData& h);
  void Histogram(std::string_view name, std::initializer_list<Label> labels,
                 const HistogramData& h) {
    Histogram(name, std::span<const Label>(labels.begin(), labels.size()), h);
  }

  // The exposition so far; the writer is empty afterwards and may be reused.
  std::string Take();

  // Writes a value as Prometheus reads it: integers exactly (no exponent) when |v| < 2^53,
  // "+Inf", "-Inf", "NaN", otherwise the shortest text that reads back to the same double.
  static void AppendValue(std::string& out, double value);
  // Appends `value` escaped for a quoted label value (\\, \", \n; invalid UTF-8 -> U+FFFD).
  static void AppendLabelValue(std::string& out, std::string_view value);

 private:
  void SampleLine(std::string_view name, std::string_view suffix, std::span<const Label> labels,
                  const Label* extra, std::string_view value);

  std::string out_;
  std::string family_;
  MetricType type_ = MetricType::kUntyped;
  std::unordered_set<std::string> families_;  // declared so far: a repeated TYPE is invalid
};

}  // namespace gpuledger::prometheus
