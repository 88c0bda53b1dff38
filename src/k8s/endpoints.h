#pragma once
// Scrape targets from the Endpoints of the agents' Service: the server discovers agents the
// way Prometheus's kubernetes_sd does, without running Prometheus.

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "k8s/api_transport.h"

namespace gpuledger::k8s {

struct ServiceRef {
  std::string namespace_name;
  std::string name;
  std::string port;  // a port name or number of the Endpoints; empty: the first port
};

// "NAMESPACE/SERVICE[:PORT]" ("gpuledger/gpuledger-agent:metrics"); errors say the form.
Result<ServiceRef> ParseServiceRef(std::string_view text);

// "ip:port" of every ready address of the service's Endpoints (a v1 Endpoints object, or an
// EndpointsList from which it is picked), sorted; not-ready addresses are left out (an agent
// still starting has nothing to say yet). kNotFound when the list does not hold it.
Result<std::vector<std::string>> EndpointTargets(std::string_view endpoints_json,
                                                 const ServiceRef& service);

// Lists the service's Endpoints through `transport`, then EndpointTargets.
Result<std::vector<std::string>> DiscoverTargets(ApiTransport& transport,
                                                 const ServiceRef& service);

}  // namespace gpuledger::k8s
