#include "prometheus/exposition_writer.h"
#include "common/enum_names.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>

#include "common/strings.h"
#include "prometheus/metric_table.h"

namespace gpuledger::prometheus {
namespace {

// Broken invariants in code that builds the exposition (style rule 6: crash loudly).
[[noreturn]] void Die(std::string_view what, std::string_view name) {
  fmt::print(stderr, "gpuledger: exposition: {}: \"{}\"\n", what, name);
  std::fflush(stderr);
  std::abort();
}

bool IsMetricName(std::string_view s) {
  if (s.empty()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool IsLabelName(std::string_view s) {
  if (s.empty() || s.starts_with("__")) return false;  // "__" names are reserved
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

// Escapes `text` for HELP (quote=false: \\ and \n) or a label value (quote=true: also \").
void AppendEscaped(std::string& out, std::string_view text, bool quote) {
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else if (static_cast<unsigned char>(c) < 0x80) {
      out += c;
    } else if (const std::size_t n = Utf8SequenceLength(text, i); n > 0) {
      out.append(text.substr(i, n));
      i += n;
      continue;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD for each invalid byte
    }
    ++i;
  }
}

constexpr double kTwoTo53 = 9007199254740992.0;

}  // namespace

constexpr NameTable<MetricType, 4> kMetricTypeNames = {{
    {MetricType::kCounter, "counter"},
    {MetricType::kGauge, "gauge"},
    {MetricType::kHistogram, "histogram"},
    {MetricType::kUntyped, "untyped"},
}};

std::string_view MetricTypeName(MetricType type) {
  return NameIn(kMetricTypeNames, type, "untyped");
}

void ExpositionWriter::AppendValue(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
  } else if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
  } else if (std::fabs(value) < kTwoTo53 && value == std::trunc(value)) {
    fmt::format_to(std::back_inserter(out), "{}", static_cast<std::int64_t>(value));
  } else {
    fmt::format_to(std::back_inserter(out), "{}", value);  // shortest round-trip
  }
}

void ExpositionWriter::AppendLabelValue(std::string& out, std::string_view value) {
  AppendEscaped(out, value, /*quote=*/true);
}

void ExpositionWriter::Family(std::string_view name, std::string_view help, MetricType type) {
  if (!IsMetricName(name)) Die("invalid metric name", name);
  if (!families_.emplace(name).second) Die("metric family declared twice", name);
  family_ = name;
  type_ = type;
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  AppendEscaped(out_, help, /*quote=*/false);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += MetricTypeName(type);
  out_ += '\n';
}

void ExpositionWriter::Family(const MetricDef& def) { Family(def.name, def.help, def.type); }

void ExpositionWriter::Sample(std::string_view name, std::span<const Label> labels, double value) {
  if (family_.empty()) Die("sample before any Family()", name);
  bool ok = false;
  if (name.starts_with(family_)) {
    const std::string_view suffix = name.substr(family_.size());
    ok = type_ == MetricType::kHistogram
             ? (suffix == "_bucket" || suffix == "_sum" || suffix == "_count")
             : suffix.empty();
  }
  if (!ok) Die(fmt::format("sample outside its family \"{}\"", family_), name);
  std::string text;
  AppendValue(text, value);
  SampleLine(name, {}, labels, nullptr, text);
}

void ExpositionWriter::Histogram(std::string_view name, std::span<const Label> labels,
                                 const HistogramData& h) {
  if (type_ != MetricType::kHistogram || name != family_)
    Die(fmt::format("histogram outside a histogram family (current \"{}\")", family_), name);
  if (h.counts.size() != h.upper_bounds.size() + 1)
    Die("histogram needs one count per bound plus the +Inf bucket", name);
  for (std::size_t i = 0; i < h.upper_bounds.size(); ++i) {
    if (!std::isfinite(h.upper_bounds[i]) || (i > 0 && h.upper_bounds[i] <= h.upper_bounds[i - 1]))
      Die("histogram bounds must be finite and strictly increasing", name);
  }
  for (const Label& l : labels) {
    if (l.first == "le") Die("histogram labels must not contain \"le\"", name);
  }
  std::uint64_t cumulative = 0;
  std::string le;
  for (std::size_t i = 0; i <= h.upper_bounds.size(); ++i) {
    cumulative += h.counts[i];
    le.clear();
    if (i < h.upper_bounds.size()) {
      AppendValue(le, h.upper_bounds[i]);
    } else {
      le = "+Inf";
    }
    const Label le_label{"le", le};
    SampleLine(name, "_bucket", labels, &le_label, fmt::format("{}", cumulative));
  }
  std::string sum;
  AppendValue(sum, h.sum);
  SampleLine(name, "_sum", labels, nullptr, sum);
  SampleLine(name, "_count", labels, nullptr, fmt::format("{}", cumulative));
}

void ExpositionWriter::SampleLine(std::string_view name, std::string_view suffix,
                                  std::span<const Label> labels, const Label* extra,
                                  std::string_view value) {
  out_ += name;
  out_ += suffix;
  if (!labels.empty() || extra != nullptr) {
    out_ += '{';
    bool first = true;
    auto append = [&](const Label& l) {
      if (!IsLabelName(l.first)) Die(fmt::format("invalid label name on {}", name), l.first);
      if (!first) out_ += ',';
      first = false;
      out_ += l.first;
      out_ += "=\"";
      AppendEscaped(out_, l.second, /*quote=*/true);
      out_ += '"';
    };
    for (std::size_t i = 0; i < labels.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (labels[j].first == labels[i].first)
          Die(fmt::format("duplicate label on {}", name), labels[i].first);
      }
      append(labels[i]);
    }
    if (extra != nullptr) append(*extra);
    out_ += '}';
  }
  out_ += ' ';
  out_ += value;
  out_ += '\n';
}

std::string ExpositionWriter::Take() {
  family_.clear();
  type_ = MetricType::kUntyped;
  families_.clear();
  return std::exchange(out_, {});
}

}  // namespace gpuledger::prometheus
