#pragma once
// What every ledger store does the same way with guardrail findings: check a
// span before writing it, keep the last of each key, turn a FindingQuery into
// SQL conditions, decode the text columns, and put what was read in the one
// read order.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/result.h"
#include "model/finding.h"
#include "store/ledger_store.h"
#include "store/sql_connection.h"

namespace gpuledger::store {

// The findings table's columns, in the order the stores write and read them.
inline constexpr std::string_view kFindingColumns =
    "cluster, node, kind, namespace, pod, pod_uid, container, gpu_uuid, "
    "first_seen_us, "
    "severity, evidence, last_seen_us, resolved_us";
// kInvalidArgument "<location>: findings row (...): ..." for a finding that
// ends before it starts; checked before a store writes anything.
Status CheckFindings(std::span<const Finding> findings, std::string_view location);

// The span with only the last finding of each key, in key order: a span written
// at once behaves as if its findings were written one after the other.
std::vector<const Finding*> LastOfEachKey(std::span<const Finding> findings);

// The conditions of `query` the database evaluates ("" when none), with their
// arguments as ?1, ?2, ... (store/sql_connection.h; texts valid while `query`
// is). min_severity is not among them (stored as text, it has no order there):
// see KeepFinding.
struct FindingFilter {
  std::string where;  // " WHERE ..." or ""
  std::vector<SqlValue> args;
};
FindingFilter MakeFindingFilter(const FindingQuery& query);

// Fills kind and severity from their stored text; false, with `what` saying
// which value was unknown, for a row this build cannot read.
bool DecodeFindingEnums(Finding& finding, std::string_view kind, std::string_view severity,
                        std::string* what);

// A finding from a cursor on a row of kFindingColumns; `Row` has Int(column) and Text(column),
// and `resolved_is_null` says whether resolved_us (the last column) is NULL. false, with `what`
// saying which value, for a row this build cannot read.
template <typename Row>
bool DecodeFindingRow(Row& q, bool resolved_is_null, Finding& f, std::string* what) {
  f.cluster = q.Text(0);
  f.node = q.Text(1);
  const std::string kind = q.Text(2);
  f.subject.namespace_name = q.Text(3);
  f.subject.pod = q.Text(4);
  f.subject.pod_uid = PodUid(q.Text(5));
  f.subject.container = q.Text(6);
  f.gpu_uuid = q.Text(7);
  f.first_seen_us = q.Int(8);
  const std::string severity = q.Text(9);
  f.evidence = q.Text(10);
  f.last_seen_us = q.Int(11);
  if (!resolved_is_null) f.resolved_us = q.Int(12);
  return DecodeFindingEnums(f, kind, severity, what);
}

// Whether a decoded finding passes what the database did not filter
// (min_severity).
bool KeepFinding(const Finding& finding, const FindingQuery& query);

// Sorts into ReadFindings' order (ledger_store.h).
void SortFindings(std::vector<Finding>& findings);

}  // namespace gpuledger::store
