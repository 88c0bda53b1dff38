#pragma once
// A lazily (re)connecting gRPC channel to a unix socket, shared by the PodResources and CRI
// clients. The kubelet and the container runtime restart and recreate their sockets: a client
// holding one long-lived channel can sit in gRPC's reconnect back-off (up to minutes) after the
// socket is back. UnixChannel instead checks that the socket exists before each call and drops
// the channel after a connection failure, so the next call connects afresh.
//
// Thread-safe. Never throws.

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include "common/result.h"

namespace gpuledger::grpc_util {

class UnixChannel {
 public:
  explicit UnixChannel(std::string socket_path);

  // The current channel, created on first use or after Reset(). kUnavailable, naming the path,
  // when the socket does not exist (the server is down or restarting).
  Result<std::shared_ptr<grpc::Channel>> Get();

  // Forget the channel; the next Get() creates a new one with its own connection.
  void Reset();

  const std::string& socket_path() const { return socket_path_; }

 private:
  const std::string socket_path_;
  std::mutex mu_;
  std::shared_ptr<grpc::Channel> channel_;  // guarded by mu_
};

// "unix:///abs/path" for absolute paths, "unix:rel/path" otherwise (gRPC naming).
std::string UnixTarget(std::string_view socket_path);

// "OK", "CANCELLED", ..., "UNAUTHENTICATED"; "CODE_<n>" for anything else.
std::string_view StatusCodeName(grpc::StatusCode code);

// A ClientContext with a deadline `timeout` from now.
std::unique_ptr<grpc::ClientContext> MakeContext(std::chrono::milliseconds timeout);

// "<socket>: <method>: <CODE_NAME>: <message>". kUnavailable when the source is down, stuck or
// refusing for now (UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, CANCELLED, ABORTED,
// UNKNOWN); kUnsupported for UNIMPLEMENTED (an older server); kInternal otherwise. Resets
// `channel` after UNAVAILABLE or DEADLINE_EXCEEDED so the next call reconnects.
Error FromGrpcStatus(UnixChannel& channel, std::string_view method, const grpc::Status& status);

}  // namespace gpuledger::grpc_util
