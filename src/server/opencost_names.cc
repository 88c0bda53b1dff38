#include "server/opencost_names.h"

#include <algorithm>
#include <optional>

#include "common/strings.h"
#include "utilization/classify.h"

namespace gpuledger::server {
namespace {

using Kind = report::Dimension::Kind;

constexpr std::string_view kUnallocated = "__unallocated__";

// How many '/'-separated parts of gpuledger's key a level takes (report.cc's Level): the
// namespace leads the controller, pod and container levels unless an earlier level is it.
std::size_t PartsOf(Kind kind, bool namespace_shown) {
  const std::size_t ns = namespace_shown ? 0 : 1;
  switch (kind) {
    case Kind::kController:
    case Kind::kContainer:
      return 2 + ns;
    case Kind::kPod:
      return 1 + ns;
    default:
      return 1;
  }
}

// OpenCost's value of a level from its parts (the namespace, when there, first).
std::string FieldOf(const report::Dimension& d, const std::vector<std::string_view>& parts,
                    std::string_view controller_kind) {
  switch (d.kind) {
    case Kind::kController: {
      const std::string_view kind = parts[parts.size() - 2];
      const std::string_view name = parts.back();
      if (kind == "Pod") return std::string(kUnallocated);
      if (!controller_kind.empty()) return std::string(name);
      return Lower(kind) + ":" + std::string(name);
    }
    case Kind::kLabel:
      return parts.back() == report::kUnlabelled ? std::string(kUnallocated)
                                                 : std::string(parts.back());
    default:
      return std::string(parts.back());
  }
}

// OpenCost's name for gpuledger's `key`; nullopt when the key does not split into the levels
// (a value holding '/': a cluster's name), which then stays as it is.
std::optional<std::string> NameOf(std::string_view key, const std::vector<report::Dimension>& dims,
                                  std::string_view controller_kind) {
  std::vector<std::string_view> parts;
  for (std::size_t start = 0; start <= key.size();) {
    const std::size_t end = std::min(key.find('/', start), key.size());
    parts.push_back(key.substr(start, end - start));
    start = end + 1;
  }
  std::string name;
  std::size_t at = 0;
  bool namespace_shown = false;
  for (const report::Dimension& d : dims) {
    const std::size_t n = PartsOf(d.kind, namespace_shown);
    if (at + n > parts.size()) return std::nullopt;
    if (!name.empty()) name += '/';
    name += FieldOf(d, {parts.begin() + at, parts.begin() + at + n}, controller_kind);
    at += n;
    namespace_shown = namespace_shown || d.kind == Kind::kNamespace;
  }
  if (at != parts.size()) return std::nullopt;
  return name;
}

}  // namespace

std::vector<report::Row> AsOpenCostEntries(std::vector<report::Row> rows,
                                           const std::vector<report::Dimension>& dims,
                                           std::string_view controller_kind) {
  for (report::Row& row : rows)
    if (auto name = NameOf(row.key, dims, controller_kind)) row.key = std::move(*name);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const report::Row& a, const report::Row& b) { return a.key < b.key; });
  std::vector<report::Row> entries;
  entries.reserve(rows.size());
  for (report::Row& row : rows) {
    if (!entries.empty() && entries.back().key == row.key) {
      entries.back().figures.Add(row.figures);
      entries.back().utilization =
          utilization::Classify(report::UtilizationInputs(entries.back().figures));
    } else {
      entries.push_back(std::move(row));
    }
  }
  return entries;
}

std::string EntryForNone(std::string_view name, std::size_t levels) {
  std::string joined(name);
  for (std::size_t i = 1; i < levels; ++i) (joined += '/') += name;
  return joined;
}

}  // namespace gpuledger::server
