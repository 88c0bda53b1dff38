#pragma once
// Starting and stopping a synchronous gRPC server on a unix socket, for the fakes.

#include <memory>
#include <string>

#include <grpcpp/impl/service_type.h>
#include <grpcpp/server.h>

#include "common/result.h"

namespace gpuledger::fake {

// Creates the parent directories, replaces a stale socket file, binds and starts. The service
// must outlive the server.
Result<std::unique_ptr<grpc::Server>> StartUnixServer(const std::string& socket_path,
                                                      grpc::Service* service);

// Shuts the server down (in-flight calls get `grace` to finish, then are cancelled), waits for
// it, and removes the socket file.
void StopUnixServer(std::unique_ptr<grpc::Server>& server, const std::string& socket_path);

}  // namespace gpuledger::fake
