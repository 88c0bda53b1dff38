#pragma once
// Inference engines the server scrapes for their token counters (issue 63, docs/tokens.md):
// the pods that opt in with annotations, as the metadata watch sees them.
//
//   gpuledger.io/tokens-port: "8000"          the engine's metrics port (required: the opt-in)
//   gpuledger.io/tokens-path: "/metrics"      its path (default /metrics)
//   gpuledger.io/model: "mistral-7b"          the model, for engines whose series name none (TGI)
//   gpuledger.io/tokens-container: "server"   the container that serves it (default: none named,
//                                             the pod's rows carry container "")

#include <functional>
#include <mutex>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "ingest/scrape_loop.h"
#include "k8s/k8s_objects.h"

namespace gpuledger::server {

// The engines among `pods`: each live pod with a pod IP whose gpuledger.io/tokens-port is a
// port (1-65535), in the pods' order. A pod whose annotations are wrong is left out, with one
// line in `problems` naming the pod, the annotation, its value and what was expected.
std::vector<ingest::EngineTarget> EngineTargets(const std::vector<k8s::ObjectInfo>& pods,
                                                std::vector<std::string>* problems = nullptr);

// EngineTargets over the pods `pods` gives now (the metadata watch's live pods), for the scrape
// loop to ask before every round; a pod's annotation problem is logged when it appears, once.
// Thread-safe.
class EngineDiscovery {
 public:
  EngineDiscovery(std::function<std::vector<k8s::ObjectInfo>()> pods, std::ostream& log)
      : pods_(std::move(pods)), log_(log) {}
  std::vector<ingest::EngineTarget> operator()();

 private:
  std::function<std::vector<k8s::ObjectInfo>()> pods_;
  std::ostream& log_;
  std::mutex mu_;
  std::set<std::string> logged_;  // the problems of the last round: logged already
};

}  // namespace gpuledger::server
