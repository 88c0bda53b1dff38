#pragma once
// The real RuntimeClient: CRI runtime.v1 (ListContainers, ListPodSandbox) over the containerd or
// CRI-O unix socket. Each call checks the socket, connects if needed (grpc_util::UnixChannel) and
// has its own deadline; a runtime that is down answers kUnavailable at once, one that hangs
// answers kUnavailable at the deadline. Errors name the socket path, the method and the gRPC
// status code. Thread-safe; never throws.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "sources/cri/runtime.h"
#include "sources/kubelet/unix_channel.h"

namespace gpuledger::cri {

struct RuntimeClientOptions {
  std::chrono::milliseconds deadline{2000};
};

class GrpcRuntimeClient final : public RuntimeClient {
 public:
  GrpcRuntimeClient(std::string socket_path, RuntimeClientOptions options);

  Result<std::vector<Container>> ListContainers() override;
  Result<std::vector<PodSandbox>> ListPodSandbox() override;

 private:
  grpc_util::UnixChannel channel_;
  const RuntimeClientOptions options_;
};

std::unique_ptr<RuntimeClient> MakeGrpcRuntimeClient(const std::string& socket_path,
                                                     RuntimeClientOptions options);

}  // namespace gpuledger::cri
