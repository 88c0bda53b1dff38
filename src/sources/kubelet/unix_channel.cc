#include "sources/kubelet/unix_channel.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

namespace gpuledger::grpc_util {
namespace {

// Kubelet clients allow 16 MiB answers (a node with many pods exceeds gRPC's 4 MiB default).
constexpr int kMaxReceiveBytes = 16 * 1024 * 1024;

}  // namespace

UnixChannel::UnixChannel(std::string socket_path) : socket_path_(std::move(socket_path)) {}

Result<std::shared_ptr<grpc::Channel>> UnixChannel::Get() {
  struct stat st {};
  if (::stat(socket_path_.c_str(), &st) != 0) {
    const int err = errno;
    Reset();
    return Unavailable(
        fmt::format("{}: socket not reachable: {}", socket_path_, std::strerror(err)));
  }
  std::lock_guard lock(mu_);
  if (!channel_) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(kMaxReceiveBytes);
    // A private subchannel pool: a new channel must not inherit a shared subchannel that is
    // still backing off from the old socket.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    channel_ = grpc::CreateCustomChannel(UnixTarget(socket_path_),
                                         grpc::InsecureChannelCredentials(), args);
  }
  return channel_;
}

void UnixChannel::Reset() {
  std::lock_guard lock(mu_);
  channel_.reset();
}

std::string UnixTarget(std::string_view socket_path) {
  if (!socket_path.empty() && socket_path.front() == '/') {
    return fmt::format("unix://{}", socket_path);
  }
  return fmt::format("unix:{}", socket_path);
}

std::string_view StatusCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "CODE_UNKNOWN_VALUE";
  }
}

std::unique_ptr<grpc::ClientContext> MakeContext(std::chrono::milliseconds timeout) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + timeout);
  return context;
}

Error FromGrpcStatus(UnixChannel& channel, std::string_view method, const grpc::Status& status) {
  const grpc::StatusCode code = status.error_code();
  std::string message = fmt::format("{}: {}: {}: {}", channel.socket_path(), method,
                                    StatusCodeName(code), status.error_message());
  switch (code) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      // The connection is broken or the server stuck: start over on the next call.
      channel.Reset();
      return Unavailable(std::move(message));
    case grpc::StatusCode::CANCELLED:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::UNKNOWN:
      return Unavailable(std::move(message));
    case grpc::StatusCode::UNIMPLEMENTED:
      return Unsupported(std::move(message));
    default:
      return Internal(std::move(message));
  }
}

}  // namespace gpuledger::grpc_util
