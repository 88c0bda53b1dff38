#pragma once
// The allocation API's `filter` parameter: OpenCost's filter language v2, so its clients'
// queries carry over (opencost core/pkg/filter/ast: lexer.go, parser.go). A filter is
// comparisons joined by '+' (all must hold) or '|' (any may), grouped by parentheses; one scope
// does not mix '+' and '|'. A comparison is
//   field OP "v1","v2"   OP ':' equals, '~:' contains, '<~:' starts with, '~>:' ends with:
//                        any of the values; with '!' before it ('!:', '!~:', '!<~:', '!~>:'):
//                        none of them
// Fields: cluster, node, namespace, pod, container, controllerKind (case as OpenCost writes it,
// "deployment", or ours, "Deployment"), controllerName, label[KEY] (the pod's label, else its
// namespace's), namespaceLabel[KEY], team, department, environment, owner, product (OpenCost's
// aliases: label[team], ...), gpu_model, sharing_mode. `label` without [KEY] compares the label
// keys (label:"app": has the label app). Quotes are optional around a value without spaces or
// operators; "" (quoted) is the value of a field that has none: label[team]:"" is what reports
// group as "unlabelled". Anything else (OpenCost's fields gpuledger does not record: services,
// annotation, nodeLabel, provider; an operator it does not know) is an error naming it and its
// position: never a filter that silently matches nothing.

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "model/ledger.h"
#include "report/report.h"

namespace gpuledger::ledger {

enum class FilterOp { kEquals, kContains, kStartsWith, kEndsWith };

struct FilterClause {
  std::string field;      // "namespace", "label", "namespaceLabel", ... (aliases resolved)
  std::string label_key;  // for label[KEY] and namespaceLabel[KEY]; "" for label's keys
  FilterOp op = FilterOp::kEquals;
  bool negate = false;              // none of the values, rather than any
  std::vector<std::string> values;  // at least one
};

// A filter: all of its parts ('+'), any of them ('|'), or one clause. The empty filter (all of
// nothing) keeps every row.
struct Filter {
  enum class Kind { kAll, kAny, kClause };
  Kind kind = Kind::kAll;
  FilterClause clause;        // kClause
  std::vector<Filter> parts;  // kAll, kAny
  bool empty() const { return kind == Kind::kAll && parts.empty(); }
};

// kInvalidArgument for a filter that is not one: "at position N: ..." (the 1-based character
// where it went wrong) and what was expected.
Result<Filter> ParseFilter(std::string_view text);
// The same text for the same filter, another for any other: what a memo of a filter's answers
// is keyed by.
std::string FilterKey(const Filter& filter);
// Whether any clause reads where a row was (cluster, node, gpu_model, sharing_mode), not who.
bool ReadsPlacement(const Filter& filter);
// What of `filter` reads only where a row was and must hold for any row to: its '+' parts (or
// itself) that read nothing else. A placement that fails it fails every row placed there.
Filter PlacementPart(const Filter& filter);
bool Matches(const Filter& filter, const ConsumerInfo& consumer, const report::Placed& placed);
// The same, the consumer's label sets held apart from it.
bool Matches(const Filter& filter, const ConsumerInfo& consumer, const ConsumerLabels& labels,
             const report::Placed& placed);

}  // namespace gpuledger::ledger
