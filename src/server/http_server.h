#pragma once
// The server's HTTP listeners. The main one: a GET of the web UI's files (`/`, `/ui/...`:
// ui/ui_assets.h) is answered from the binary, every other GET goes to Api::Handle. The
// OpenCost one (`server --opencost-listen`): every GET goes to Api::HandleOpenCost.

#include <memory>
#include <string>

#include "common/result.h"
#include "server/api.h"

namespace gpuledger::server {

class HttpServer {
 public:
  enum class Kind { kMain, kOpenCost };
  // `listen` is "host:port"; port 0 picks a free port.
  static Result<std::unique_ptr<HttpServer>> Bind(const std::string& listen, Api& api,
                                                  Kind kind = Kind::kMain);
  ~HttpServer();
  int port() const;
  const std::string& host() const;
  void Serve();  // blocks until Stop()
  void Stop();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuledger::server
