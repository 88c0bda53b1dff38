#include "fake_grpc/unix_server.h"

#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

namespace gpuledger::fake {
namespace {

void RemoveSocketFile(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) ::unlink(path.c_str());
}

}  // namespace

Result<std::unique_ptr<grpc::Server>> StartUnixServer(const std::string& socket_path,
                                                      grpc::Service* service) {
  if (socket_path.empty() || socket_path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    return InvalidArgument(fmt::format("{}: unix socket path empty or longer than {} bytes",
                                       socket_path, sizeof(sockaddr_un{}.sun_path) - 1));
  }
  std::error_code ec;
  const auto parent = std::filesystem::path(socket_path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) return IoError(fmt::format("{}: cannot create directory: {}", socket_path, ec.message()));
  struct stat st {};
  if (::lstat(socket_path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return InvalidArgument(fmt::format("{}: exists and is not a socket", socket_path));
    }
    RemoveSocketFile(socket_path);
  }
  const std::string target =
      socket_path.front() == '/' ? "unix://" + socket_path : "unix:" + socket_path;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(target, grpc::InsecureServerCredentials());
  builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) return IoError(fmt::format("{}: cannot start a gRPC server there", socket_path));
  return server;
}

void StopUnixServer(std::unique_ptr<grpc::Server>& server, const std::string& socket_path) {
  if (!server) return;
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server->Wait();
  server.reset();
  RemoveSocketFile(socket_path);
}

}  // namespace gpuledger::fake
