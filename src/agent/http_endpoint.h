#pragma once
// The agent's HTTP endpoint: /metrics copies the collector's pre-rendered exposition (gzipped
// when the scraper accepts it), /healthz says whether cycles are still completing.

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "agent/collector.h"
#include "common/result.h"

namespace gpuledger::agent {

class HttpEndpoint {
 public:
  // `listen` is "host:port"; port 0 picks a free port (see port()).
  static Result<std::unique_ptr<HttpEndpoint>> Bind(const std::string& listen, Collector& collector,
                                                    Micros healthy_within_us);
  ~HttpEndpoint();
  int port() const;
  // Serves until Stop(); blocks.
  void Serve();
  void Stop();

 private:
  struct Impl;
  explicit HttpEndpoint(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuledger::agent
