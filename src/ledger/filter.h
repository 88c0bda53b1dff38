#pragma once
// The allocation API's `filter` parameter: a subset of OpenCost's filter language v2, so its
// users' queries carry over. Clauses joined by '+' must all hold; a clause is
//   field:"v1","v2"    the field equals one of the values
//   field!:"v1"        the field equals none of them
// Fields: namespace, node, pod, container, controllerKind, controllerName, label[KEY] (pod
// label, else the namespace's), gpu_model, sharing_mode. Quotes are optional; "" (quoted) is the
// value of a field that has none: label[team]:"" is what reports group as "unlabelled".

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "model/ledger.h"
#include "report/report.h"

namespace gpuledger::ledger {

struct FilterClause {
  std::string field;      // "namespace", "label", ...
  std::string label_key;  // for label[KEY]
  bool negate = false;
  std::vector<std::string> values;
};
using Filter = std::vector<FilterClause>;

Result<Filter> ParseFilter(std::string_view text);
// The same text for the same clauses, another for any other: what a memo of a filter's
// answers is keyed by.
std::string FilterKey(const Filter& filter);
// Whether the clause reads where a row was (node, gpu_model, sharing_mode), not who it was.
bool ReadsPlacement(const FilterClause& clause);
bool Matches(const Filter& filter, const UsageRow& row);
bool Matches(const Filter& filter, const ConsumerInfo& consumer, const report::Placed& placed);
// The same, the consumer's label sets held apart from it.
bool Matches(const Filter& filter, const ConsumerInfo& consumer, const ConsumerLabels& labels,
             const report::Placed& placed);

}  // namespace gpuledger::ledger
