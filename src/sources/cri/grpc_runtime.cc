#include "sources/cri/grpc_runtime.h"

#include <exception>
#include <utility>

#include <fmt/format.h>

#include "cri/runtime/v1/api.grpc.pb.h"
#include "sources/cri/runtime_parse.h"

namespace gpuledger::cri {
namespace {

// One unary call: channel, deadline, status mapping, exception barrier.
template <typename Response, typename Rpc>
Result<Response> Call(grpc_util::UnixChannel& channel, std::chrono::milliseconds deadline,
                      std::string_view method, Rpc rpc) {
  try {
    auto ch = channel.Get();
    if (!ch) return ch.error();
    auto stub = ::runtime::v1::RuntimeService::NewStub(*ch);
    auto context = grpc_util::MakeContext(deadline);
    Response response;
    grpc::Status status = rpc(*stub, context.get(), &response);
    if (!status.ok()) return grpc_util::FromGrpcStatus(channel, method, status);
    return response;
  } catch (const std::exception& e) {
    return Internal(fmt::format("{}: {}: {}", channel.socket_path(), method, e.what()));
  } catch (...) {
    return Internal(fmt::format("{}: {}: unknown exception", channel.socket_path(), method));
  }
}

}  // namespace

GrpcRuntimeClient::GrpcRuntimeClient(std::string socket_path, RuntimeClientOptions options)
    : channel_(std::move(socket_path)), options_(options) {}

Result<std::vector<Container>> GrpcRuntimeClient::ListContainers() {
  auto response = Call<::runtime::v1::ListContainersResponse>(
      channel_, options_.deadline, "ListContainers",
      [](auto& stub, grpc::ClientContext* ctx, auto* out) {
        return stub.ListContainers(ctx, ::runtime::v1::ListContainersRequest{}, out);
      });
  if (!response) return response.error();
  return ParseListContainersResponse(*response);
}

Result<std::vector<PodSandbox>> GrpcRuntimeClient::ListPodSandbox() {
  auto response = Call<::runtime::v1::ListPodSandboxResponse>(
      channel_, options_.deadline, "ListPodSandbox",
      [](auto& stub, grpc::ClientContext* ctx, auto* out) {
        return stub.ListPodSandbox(ctx, ::runtime::v1::ListPodSandboxRequest{}, out);
      });
  if (!response) return response.error();
  return ParseListPodSandboxResponse(*response);
}

std::unique_ptr<RuntimeClient> MakeGrpcRuntimeClient(const std::string& socket_path,
                                                     RuntimeClientOptions options) {
  return std::make_unique<GrpcRuntimeClient>(socket_path, options);
}

std::unique_ptr<RuntimeClient> MakeGrpcRuntimeClient(const std::string& socket_path) {
  return MakeGrpcRuntimeClient(socket_path, RuntimeClientOptions{});
}

}  // namespace gpuledger::cri
