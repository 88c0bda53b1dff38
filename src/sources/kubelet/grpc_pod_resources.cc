#include "sources/kubelet/grpc_pod_resources.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <utility>

#include <fmt/format.h>

#include "kubelet/podresources/v1/api.grpc.pb.h"
#include "sources/kubelet/pod_resources_parse.h"

namespace gpuledger::kubelet {

using Clock = std::chrono::steady_clock;

struct GrpcPodResourcesClient::Impl {
  Impl(std::string path, PodResourcesClientOptions opts)
      : channel(std::move(path)), options(std::move(opts)) {
    if (!options.now) options.now = [] { return Clock::now(); };
    next_backoff = options.initial_backoff;
  }

  // kUnavailable while backing off from RESOURCE_EXHAUSTED.
  Status CheckBackoff(std::string_view method) {
    std::lock_guard lock(mu);
    const Clock::time_point now = options.now();
    if (now >= blocked_until) return Status::Ok();
    const auto remaining =
        std::chrono::duration_cast<std::chrono::milliseconds>(blocked_until - now);
    const long long seconds = (remaining.count() + 999) / 1000;
    return Unavailable(
        fmt::format("{}: {}: rate limited, retry in {}s", channel.socket_path(), method, seconds));
  }

  // Records the outcome of a call that reached the kubelet.
  Error OnFailure(std::string_view method, const grpc::Status& status) {
    Error error = grpc_util::FromGrpcStatus(channel, method, status);
    if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      std::lock_guard lock(mu);
      const auto wait = next_backoff;
      blocked_until = options.now() + wait;
      next_backoff = std::min(next_backoff * 2, options.max_backoff);
      error.message += fmt::format("; rate limited, retry in {}s", (wait.count() + 999) / 1000);
    }
    return error;
  }

  void OnSuccess() {
    std::lock_guard lock(mu);
    next_backoff = options.initial_backoff;
  }

  // Runs one unary call: back-off check, channel, deadline, status mapping, exception barrier.
  template <typename Response, typename Rpc>
  Result<Response> Call(std::string_view method, Rpc rpc) {
    try {
      if (Status s = CheckBackoff(method); !s.ok()) return s.error();
      auto ch = channel.Get();
      if (!ch) return ch.error();
      auto stub = ::v1::PodResourcesLister::NewStub(*ch);
      auto context = grpc_util::MakeContext(options.deadline);
      Response response;
      grpc::Status status = rpc(*stub, context.get(), &response);
      if (!status.ok()) return OnFailure(method, status);
      OnSuccess();
      return response;
    } catch (const std::exception& e) {
      return Internal(fmt::format("{}: {}: {}", channel.socket_path(), method, e.what()));
    } catch (...) {
      return Internal(fmt::format("{}: {}: unknown exception", channel.socket_path(), method));
    }
  }

  grpc_util::UnixChannel channel;
  PodResourcesClientOptions options;
  std::mutex mu;
  Clock::time_point blocked_until{};         // guarded by mu
  std::chrono::milliseconds next_backoff{};  // guarded by mu
};

GrpcPodResourcesClient::GrpcPodResourcesClient(std::string socket_path,
                                               PodResourcesClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(socket_path), std::move(options))) {}

GrpcPodResourcesClient::~GrpcPodResourcesClient() = default;

Result<std::vector<ContainerGrant>> GrpcPodResourcesClient::List() {
  auto response = impl_->Call<::v1::ListPodResourcesResponse>(
      "List", [](auto& stub, grpc::ClientContext* ctx, auto* out) {
        return stub.List(ctx, ::v1::ListPodResourcesRequest{}, out);
      });
  if (!response) return response.error();
  return ParseListResponse(*response);
}

Result<std::vector<AllocatableDevice>> GrpcPodResourcesClient::GetAllocatableResources() {
  auto response = impl_->Call<::v1::AllocatableResourcesResponse>(
      "GetAllocatableResources", [](auto& stub, grpc::ClientContext* ctx, auto* out) {
        return stub.GetAllocatableResources(ctx, ::v1::AllocatableResourcesRequest{}, out);
      });
  if (!response) return response.error();
  return ParseAllocatableResponse(*response);
}

Result<std::vector<ContainerGrant>> GrpcPodResourcesClient::Get(const std::string& namespace_name,
                                                                const std::string& pod) {
  ::v1::GetPodResourcesRequest request;
  request.set_pod_name(pod);
  request.set_pod_namespace(namespace_name);
  auto response = impl_->Call<::v1::GetPodResourcesResponse>(
      "Get", [&request](auto& stub, grpc::ClientContext* ctx, auto* out) {
        return stub.Get(ctx, request, out);
      });
  if (!response) return response.error();
  return ParsePodResources(response->pod_resources());
}

std::unique_ptr<PodResourcesClient> MakeGrpcPodResourcesClient(const std::string& socket_path,
                                                               PodResourcesClientOptions options) {
  return std::make_unique<GrpcPodResourcesClient>(socket_path, std::move(options));
}

std::unique_ptr<PodResourcesClient> MakeGrpcPodResourcesClient(const std::string& socket_path) {
  return MakeGrpcPodResourcesClient(socket_path, PodResourcesClientOptions{});
}

}  // namespace gpuledger::kubelet
