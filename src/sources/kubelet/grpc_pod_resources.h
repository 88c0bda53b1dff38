#pragma once
// The real PodResourcesClient: kubelet PodResources v1 over its unix socket.
//
// Each call checks the socket, connects if needed (see grpc_util::UnixChannel) and has its own
// deadline. The kubelet rate-limits this API globally: after RESOURCE_EXHAUSTED the client backs
// off (initial_backoff, doubling per consecutive refusal up to max_backoff, reset by a success)
// and answers kUnavailable "rate limited, retry in Ns" without calling the kubelet. Errors name
// the socket path, the method and the gRPC status code. Thread-safe; never throws.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "sources/kubelet/pod_resources.h"
#include "sources/kubelet/unix_channel.h"

namespace gpuledger::kubelet {

struct PodResourcesClientOptions {
  std::chrono::milliseconds deadline{2000};
  std::chrono::milliseconds initial_backoff{1000};
  std::chrono::milliseconds max_backoff{60000};
  // Monotonic time for the back-off; tests inject their own. Empty: std::chrono::steady_clock.
  std::function<std::chrono::steady_clock::time_point()> now;
};

class GrpcPodResourcesClient final : public PodResourcesClient {
 public:
  GrpcPodResourcesClient(std::string socket_path, PodResourcesClientOptions options);
  ~GrpcPodResourcesClient() override;

  Result<std::vector<ContainerGrant>> List() override;
  Result<std::vector<AllocatableDevice>> GetAllocatableResources() override;
  // One pod's grants (PodResources v1 Get; kubelet 1.27+ with the feature gate on, else
  // kUnsupported).
  Result<std::vector<ContainerGrant>> Get(const std::string& namespace_name,
                                          const std::string& pod);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::unique_ptr<PodResourcesClient> MakeGrpcPodResourcesClient(const std::string& socket_path,
                                                               PodResourcesClientOptions options);

}  // namespace gpuledger::kubelet
