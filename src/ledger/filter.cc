#include "ledger/filter.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/strings.h"

namespace gpuledger::ledger {
namespace {

constexpr std::string_view kFields[] = {"namespace", "node",           "pod",
                                        "container", "controllerKind", "controllerName",
                                        "gpu_model", "sharing_mode"};

std::string FieldValue(const FilterClause& c, const ConsumerInfo& info,
                       const ConsumerLabels& labels, const report::Placed& row) {
  if (c.field == "namespace") return info.ref.namespace_name;
  if (c.field == "node") return row.node;
  if (c.field == "pod") return info.ref.pod;
  if (c.field == "container") return info.ref.container;
  if (c.field == "controllerKind") return info.owner_kind;
  if (c.field == "controllerName") return info.owner_name;
  if (c.field == "gpu_model") return row.gpu_model;
  if (c.field == "sharing_mode") return std::string(ToString(row.sharing));
  if (c.field == "label") {
    if (const std::string* value = labels.Find(c.label_key)) return *value;
  }
  return {};
}

// Splits on `sep` outside double quotes.
std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  bool quoted = false;
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '"') quoted = !quoted;
    if (s[i] == sep && !quoted) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(s.substr(start));
  return parts;
}

}  // namespace

Result<Filter> ParseFilter(std::string_view text) {
  Filter filter;
  if (Trim(text).empty()) return filter;
  if (std::count(text.begin(), text.end(), '"') % 2 != 0)
    return InvalidArgument(fmt::format("'{}': a '\"' is not closed", text));
  for (std::string_view raw : Split(text, '+')) {
    std::string_view clause = Trim(raw);
    auto colon = clause.find(':');
    if (colon == std::string_view::npos)
      return InvalidArgument(fmt::format("'{}': expected field:\"value\"", clause));
    FilterClause c;
    std::string_view field = clause.substr(0, colon);
    if (field.ends_with("!")) {
      c.negate = true;
      field.remove_suffix(1);
    }
    if (field.starts_with("label[") && field.ends_with("]")) {
      c.field = "label";
      c.label_key = std::string(field.substr(6, field.size() - 7));
    } else if (std::find(std::begin(kFields), std::end(kFields), field) != std::end(kFields)) {
      c.field = std::string(field);
    } else {
      return InvalidArgument(fmt::format(
          "unknown field '{}' (namespace, node, pod, container, controllerKind, controllerName, "
          "label[KEY], gpu_model, sharing_mode)",
          field));
    }
    for (std::string_view v : Split(clause.substr(colon + 1), ',')) {
      v = Trim(v);
      const bool quoted = v.size() >= 2 && v.front() == '"' && v.back() == '"';
      if (quoted) v = v.substr(1, v.size() - 2);
      // "" names what has no value (a pod without the label); a bare empty value is a typo.
      if (v.empty() && !quoted)
        return InvalidArgument(fmt::format("'{}': empty value (\"\" for none)", clause));
      c.values.emplace_back(v);
    }
    filter.push_back(std::move(c));
  }
  return filter;
}

std::string FilterKey(const Filter& filter) {
  std::string key;
  for (const FilterClause& c : filter) {
    key += c.field;
    key += '[';
    key += c.label_key;
    key += c.negate ? "]!" : "]";
    for (const std::string& v : c.values) AppendLengthPrefixed(key, v);
    key += '\n';
  }
  return key;
}

bool ReadsPlacement(const FilterClause& c) {
  return c.field == "node" || c.field == "gpu_model" || c.field == "sharing_mode";
}

bool Matches(const Filter& filter, const UsageRow& row) {
  static const std::string kNoCluster;  // no filter field reads the cluster
  return Matches(filter, row.consumer,
                 report::Placed{kNoCluster, row.node, row.gpu_model, row.gpu, row.sharing});
}

bool Matches(const Filter& filter, const ConsumerInfo& consumer, const report::Placed& placed) {
  return Matches(filter, consumer, LabelsOf(consumer), placed);
}

bool Matches(const Filter& filter, const ConsumerInfo& consumer, const ConsumerLabels& labels,
             const report::Placed& placed) {
  for (const FilterClause& c : filter) {
    const std::string v = FieldValue(c, consumer, labels, placed);
    const bool in = std::find(c.values.begin(), c.values.end(), v) != c.values.end();
    if (in == c.negate) return false;
  }
  return true;
}

}  // namespace gpuledger::ledger
