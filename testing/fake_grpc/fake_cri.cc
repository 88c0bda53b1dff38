#include "fake_grpc/fake_cri.h"

#include <utility>

#include <grpcpp/server.h>

#include "cri/runtime/v1/api.grpc.pb.h"
#include "fake_grpc/unix_server.h"
#include "sources/cri/runtime_parse.h"

namespace gpuledger::fake {

struct FakeCri::State {
  std::mutex mu;
  std::vector<cri::PodSandbox> sandboxes;  // guarded by mu
  std::vector<cri::Container> containers;  // guarded by mu
};

class FakeCri::Service final : public ::runtime::v1::RuntimeService::Service {
 public:
  Service(std::shared_ptr<State> state, std::shared_ptr<ServerControl> control)
      : state_(std::move(state)), control_(std::move(control)) {}

  grpc::Status ListPodSandbox(grpc::ServerContext* context,
                              const ::runtime::v1::ListPodSandboxRequest* request,
                              ::runtime::v1::ListPodSandboxResponse* response) override {
    if (grpc::Status s = control_->Enter(context); !s.ok()) return s;
    std::lock_guard lock(state_->mu);
    for (const auto& sandbox : state_->sandboxes) {
      if (cri::Matches(request->filter(), sandbox)) *response->add_items() = cri::ToProto(sandbox);
    }
    return grpc::Status::OK;
  }

  grpc::Status ListContainers(grpc::ServerContext* context,
                              const ::runtime::v1::ListContainersRequest* request,
                              ::runtime::v1::ListContainersResponse* response) override {
    if (grpc::Status s = control_->Enter(context); !s.ok()) return s;
    std::lock_guard lock(state_->mu);
    for (const auto& container : state_->containers) {
      if (cri::Matches(request->filter(), container)) {
        *response->add_containers() = cri::ToProto(container);
      }
    }
    return grpc::Status::OK;
  }

 private:
  std::shared_ptr<State> state_;
  std::shared_ptr<ServerControl> control_;
};

FakeCri::FakeCri()
    : state_(std::make_shared<State>()), control_(std::make_shared<ServerControl>()) {}

FakeCri::~FakeCri() { Stop(); }

Status FakeCri::Start(const std::string& socket_path) {
  std::lock_guard lock(server_mu_);
  if (server_) return InvalidArgument("fake CRI already serving on " + socket_path_);
  control_->Reopen();
  auto service = std::make_unique<Service>(state_, control_);
  auto server = StartUnixServer(socket_path, service.get());
  if (!server) return server.error();
  service_ = std::move(service);
  server_ = std::move(*server);
  socket_path_ = socket_path;
  return Status::Ok();
}

void FakeCri::Stop() {
  std::lock_guard lock(server_mu_);
  if (!server_) return;
  control_->Close();
  StopUnixServer(server_, socket_path_);
  service_.reset();
}

bool FakeCri::running() const {
  std::lock_guard lock(server_mu_);
  return server_ != nullptr;
}

std::string FakeCri::socket_path() const {
  std::lock_guard lock(server_mu_);
  return socket_path_;
}

void FakeCri::SetSandboxes(const std::vector<cri::PodSandbox>& sandboxes) {
  std::lock_guard lock(state_->mu);
  state_->sandboxes = sandboxes;
}

void FakeCri::SetContainers(const std::vector<cri::Container>& containers) {
  std::lock_guard lock(state_->mu);
  state_->containers = containers;
}

}  // namespace gpuledger::fake
