#include "prometheus/http_stats.h"

#include "prometheus/exposition_writer.h"

namespace gpuledger::prometheus {

std::string RenderHttpStats(const http::ServerStats& s, const HttpStatsDefs& defs) {
  ExpositionWriter w;
  auto counter = [&](const MetricDef& def, std::uint64_t value) {
    w.Family(def);
    w.Sample(def.name, static_cast<double>(value));
  };
  counter(defs.connections, s.connections_accepted.load());
  counter(defs.connections_evicted, s.connections_evicted.load());
  counter(defs.requests_timed_out, s.requests_timed_out.load());
  counter(defs.requests_refused, s.requests_refused.load());
  return w.Take();
}

}  // namespace gpuledger::prometheus
