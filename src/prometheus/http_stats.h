#pragma once
// An HTTP listener's counters (http::ServerStats) in the Prometheus text format, for the /metrics
// of the agent and the server.

#include <string>

#include "http/server.h"
#include "prometheus/metric_table.h"

namespace gpuledger::prometheus {

// The counters as the families `defs` names: kServerHttpStats for the API, kAgentHttpStats for
// the agent.
std::string RenderHttpStats(const http::ServerStats& stats, const HttpStatsDefs& defs);

}  // namespace gpuledger::prometheus
