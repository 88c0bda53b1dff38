#pragma once
// Allocations named as OpenCost names them, for OpenCost's paths (/allocation, ...): one field
// per aggregate level joined by '/' (its clients split names so: kubectl cost's table needs as
// many fields as levels), each field OpenCost's value for the level:
//   controller  KIND:NAME with the kind in lower case ("deployment:api"); NAME alone when the
//               aggregate named one kind (aggregate=deployment); __unallocated__ for a pod
//               without a controller
//   pod         the pod's name; container the container's name (namespace in its own level)
//   label:KEY   the value; __unallocated__ for a consumer without the label
//   others      as gpuledger's keys have them
// Rows that take one name (two namespaces' pods of one name grouped by pod alone, as OpenCost
// groups them) are one entry, their figures summed.

#include <string>
#include <string_view>
#include <vector>

#include "report/report.h"

namespace gpuledger::server {

// `rows` renamed and merged as above, in the order of their names.
std::vector<report::Row> AsOpenCostEntries(std::vector<report::Row> rows,
                                           const std::vector<report::Dimension>& dims,
                                           std::string_view controller_kind);

// The name of an entry that belongs to no consumer, one field per level ("__unattributed__" by
// namespace and pod: "__unattributed__/__unattributed__"). __idle__ stays one field: OpenCost's
// clients look for it by that name.
std::string EntryForNone(std::string_view name, std::size_t levels);

}  // namespace gpuledger::server
