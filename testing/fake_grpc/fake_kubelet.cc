#include "fake_grpc/fake_kubelet.h"

#include <utility>

#include <grpcpp/server.h>

#include "fake_grpc/unix_server.h"
#include "kubelet/podresources/v1/api.grpc.pb.h"
#include "sources/kubelet/pod_resources_parse.h"

namespace gpuledger::fake {

struct FakeKubelet::State {
  std::mutex mu;
  ::v1::ListPodResourcesResponse list;             // guarded by mu
  ::v1::AllocatableResourcesResponse allocatable;  // guarded by mu
};

class FakeKubelet::Service final : public ::v1::PodResourcesLister::Service {
 public:
  Service(std::shared_ptr<State> state, std::shared_ptr<ServerControl> control)
      : state_(std::move(state)), control_(std::move(control)) {}

  grpc::Status List(grpc::ServerContext* context, const ::v1::ListPodResourcesRequest*,
                    ::v1::ListPodResourcesResponse* response) override {
    if (grpc::Status s = control_->Enter(context); !s.ok()) return s;
    std::lock_guard lock(state_->mu);
    *response = state_->list;
    return grpc::Status::OK;
  }

  grpc::Status GetAllocatableResources(grpc::ServerContext* context,
                                       const ::v1::AllocatableResourcesRequest*,
                                       ::v1::AllocatableResourcesResponse* response) override {
    if (grpc::Status s = control_->Enter(context); !s.ok()) return s;
    std::lock_guard lock(state_->mu);
    *response = state_->allocatable;
    return grpc::Status::OK;
  }

  grpc::Status Get(grpc::ServerContext* context, const ::v1::GetPodResourcesRequest* request,
                   ::v1::GetPodResourcesResponse* response) override {
    if (grpc::Status s = control_->Enter(context); !s.ok()) return s;
    std::lock_guard lock(state_->mu);
    for (const auto& pod : state_->list.pod_resources()) {
      if (pod.name() == request->pod_name() && pod.namespace_() == request->pod_namespace()) {
        *response->mutable_pod_resources() = pod;
        return grpc::Status::OK;
      }
    }
    // The kubelet's answer for an unknown pod.
    return {grpc::StatusCode::NOT_FOUND,
            "pod " + request->pod_namespace() + "/" + request->pod_name() + " not found"};
  }

 private:
  std::shared_ptr<State> state_;
  std::shared_ptr<ServerControl> control_;
};

FakeKubelet::FakeKubelet()
    : state_(std::make_shared<State>()), control_(std::make_shared<ServerControl>()) {}

FakeKubelet::~FakeKubelet() { Stop(); }

Status FakeKubelet::Start(const std::string& socket_path) {
  std::lock_guard lock(server_mu_);
  if (server_) return InvalidArgument("fake kubelet already serving on " + socket_path_);
  control_->Reopen();
  auto service = std::make_unique<Service>(state_, control_);
  auto server = StartUnixServer(socket_path, service.get());
  if (!server) return server.error();
  service_ = std::move(service);
  server_ = std::move(*server);
  socket_path_ = socket_path;
  return Status::Ok();
}

void FakeKubelet::Stop() {
  std::lock_guard lock(server_mu_);
  if (!server_) return;
  control_->Close();
  StopUnixServer(server_, socket_path_);
  service_.reset();
}

bool FakeKubelet::running() const {
  std::lock_guard lock(server_mu_);
  return server_ != nullptr;
}

std::string FakeKubelet::socket_path() const {
  std::lock_guard lock(server_mu_);
  return socket_path_;
}

void FakeKubelet::SetGrants(const std::vector<kubelet::ContainerGrant>& grants) {
  SetListResponse(kubelet::ToListResponse(grants));
}

void FakeKubelet::SetListResponse(const ::v1::ListPodResourcesResponse& response) {
  std::lock_guard lock(state_->mu);
  state_->list = response;
}

void FakeKubelet::SetAllocatable(const std::vector<kubelet::AllocatableDevice>& devices) {
  auto response = kubelet::ToAllocatableResponse(devices);
  std::lock_guard lock(state_->mu);
  state_->allocatable = std::move(response);
}

}  // namespace gpuledger::fake
