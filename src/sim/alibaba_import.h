#pragma once
// Import of the Alibaba "openb" GPU-sharing trace (cluster-trace-gpu-v2023) as a scenario:
// every pod that held GPUs becomes a workload with an explicit placement, so replaying it meters
// exactly what the trace says was allocated. Rules and assumptions: docs/scenarios.md.

#include <string>
#include <string_view>

#include "common/result.h"

namespace gpuledger::sim {

// pods_csv: openb_pod_list_*.csv content; nodes_csv: openb_node_list_*.csv content. The file
// names only label errors ("openb_pod_list_default.csv:17: column 'num_gpu': ..."). Returns
// scenario YAML that ParseScenario accepts.
Result<std::string> ImportAlibabaTrace(std::string_view pods_csv, std::string_view pods_file_name,
                                       std::string_view nodes_csv,
                                       std::string_view nodes_file_name);

}  // namespace gpuledger::sim
