#pragma once
// A CRI runtime.v1 server (ListContainers, ListPodSandbox) for tests and `gpuledger-sim-node`:
// serves the real protos on a unix socket, honouring the request filters. No gtest dependency.
//
// State can be set at any time from any thread. Start/Stop may be repeated (a runtime restart):
// Stop removes the socket file, Start creates it again.

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/result.h"
#include "fake_grpc/fake_server_control.h"
#include "sources/cri/runtime.h"

namespace grpc {
class Server;
}

namespace gpuledger::fake {

class FakeCri {
 public:
  FakeCri();
  ~FakeCri();  // Stop()
  FakeCri(const FakeCri&) = delete;
  FakeCri& operator=(const FakeCri&) = delete;

  // As FakeKubelet::Start.
  Status Start(const std::string& socket_path);
  void Stop();
  bool running() const;
  std::string socket_path() const;

  void SetSandboxes(const std::vector<cri::PodSandbox>& sandboxes);
  void SetContainers(const std::vector<cri::Container>& containers);

  ServerControl& control() { return *control_; }
  int calls() const { return control_->calls(); }

 private:
  class Service;
  struct State;

  std::shared_ptr<State> state_;
  std::shared_ptr<ServerControl> control_;
  mutable std::mutex server_mu_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string socket_path_;
};

}  // namespace gpuledger::fake
