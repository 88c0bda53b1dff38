#pragma once
// A kubelet PodResources v1 server for tests and `gpuledger-sim-node`: serves the real protos on
// a unix socket so the agent's real gRPC client runs against it. No gtest dependency.
//
// State (grants, allocatable devices, scripted failures) can be set at any time from any thread;
// each call answers from the state current when it arrives. Start/Stop may be repeated (a
// kubelet restart): Stop removes the socket file, Start creates it again.

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/result.h"
#include "fake_grpc/fake_server_control.h"
#include "kubelet/podresources/v1/api.pb.h"
#include "sources/kubelet/pod_resources.h"

namespace grpc {
class Server;
}

namespace gpuledger::fake {

class FakeKubelet {
 public:
  FakeKubelet();
  ~FakeKubelet();  // Stop()
  FakeKubelet(const FakeKubelet&) = delete;
  FakeKubelet& operator=(const FakeKubelet&) = delete;

  // Listens on socket_path (parent directories are created, a stale socket file replaced).
  // kInvalidArgument if already running or the path is too long for a unix socket; kIo if the
  // server cannot bind.
  Status Start(const std::string& socket_path);
  // Stops serving (in-flight calls are released), then removes the socket file. Idempotent.
  void Stop();
  bool running() const;
  std::string socket_path() const;

  // List answers these grants (converted with kubelet::ToListResponse, DRA included).
  void SetGrants(const std::vector<kubelet::ContainerGrant>& grants);
  // List answers exactly this message (e.g. an old kubelet's field set, or a terminal pod).
  void SetListResponse(const ::v1::ListPodResourcesResponse& response);
  void SetAllocatable(const std::vector<kubelet::AllocatableDevice>& devices);

  ServerControl& control() { return *control_; }
  // Calls that reached the server, all methods together.
  int calls() const { return control_->calls(); }

 private:
  class Service;
  struct State;

  std::shared_ptr<State> state_;
  std::shared_ptr<ServerControl> control_;
  mutable std::mutex server_mu_;  // serializes Start/Stop
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string socket_path_;
};

}  // namespace gpuledger::fake
