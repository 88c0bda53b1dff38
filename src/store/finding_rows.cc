#include "store/finding_rows.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

namespace gpuledger::store {

Status CheckFindings(std::span<const Finding> findings, std::string_view location) {
  for (const Finding& f : findings) {
    const bool ends_early =
        f.last_seen_us < f.first_seen_us || (f.resolved_us && *f.resolved_us < f.first_seen_us);
    if (!ends_early) continue;
    return InvalidArgument(fmt::format(
        "{}: findings row ({} of {} on node '{}', gpu '{}', "
        "first_seen_us {}): last_seen_us {} "
        "or resolved_us {} is before first_seen_us",
        location, ToString(f.kind), f.subject.Key(), f.node, f.gpu_uuid, f.first_seen_us,
        f.last_seen_us, f.resolved_us ? std::to_string(*f.resolved_us) : "unset", f.first_seen_us));
  }
  return Status::Ok();
}

std::vector<const Finding*> LastOfEachKey(std::span<const Finding> findings) {
  std::map<Finding::KeyType, const Finding*> last;
  for (const Finding& f : findings) last[f.Key()] = &f;
  std::vector<const Finding*> out;
  out.reserve(last.size());
  for (const auto& [key, f] : last) out.push_back(f);
  return out;
}

FindingFilter MakeFindingFilter(const FindingQuery& q) {
  FindingFilter filter;
  std::vector<std::string> conditions;
  auto arg = [&](SqlValue value) {
    filter.args.push_back(value);
    return fmt::format("?{}", filter.args.size());
  };
  // The finding's time is closed at both ends: one seen at a single instant
  // still overlaps.
  conditions.push_back("first_seen_us < " + arg(q.to_us));
  conditions.push_back("coalesce(resolved_us, last_seen_us) >= " + arg(q.from_us));
  if (q.kind) conditions.push_back("kind = " + arg(ToString(*q.kind)));
  if (!q.namespace_name.empty()) {
    conditions.push_back("namespace = " + arg(std::string_view(q.namespace_name)));
  }
  if (q.open_only) conditions.emplace_back("resolved_us IS NULL");
  if (!q.cluster.empty()) conditions.push_back("cluster = " + arg(std::string_view(q.cluster)));
  if (!q.node.empty()) conditions.push_back("node = " + arg(std::string_view(q.node)));
  for (std::size_t i = 0; i < conditions.size(); ++i) {
    filter.where += (i == 0 ? " WHERE " : " AND ") + conditions[i];
  }
  return filter;
}

bool DecodeFindingEnums(Finding& f, std::string_view kind, std::string_view severity,
                        std::string* what) {
  auto k = ParseFindingKind(kind);
  auto s = ParseSeverity(severity);
  if (!k || !s) {
    *what = fmt::format("{} on node '{}': unknown kind '{}' or severity '{}'", f.subject.Key(),
                        f.node, kind, severity);
    return false;
  }
  f.kind = *k;
  f.severity = *s;
  return true;
}

bool KeepFinding(const Finding& f, const FindingQuery& q) {
  return !q.min_severity || f.severity >= *q.min_severity;
}

void SortFindings(std::vector<Finding>& findings) {
  std::sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    return std::tie(a.first_seen_us, a.node, a.kind, a.subject, a.gpu_uuid, a.cluster) <
           std::tie(b.first_seen_us, b.node, b.kind, b.subject, b.gpu_uuid, b.cluster);
  });
}

}  // namespace gpuledger::store
