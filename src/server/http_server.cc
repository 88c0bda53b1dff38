#include "server/http_server.h"

#include <fmt/format.h>
#include <httplib.h>

#include "prometheus/listen.h"
#include "prometheus/listener.h"

namespace gpuledger::server {

struct HttpServer::Impl {
  httplib::Server http;
  std::string host;
  int port = 0;
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServer::~HttpServer() { Stop(); }

Result<std::unique_ptr<HttpServer>> HttpServer::Bind(const std::string& listen, Api& api) {
  auto addr = prometheus::ParseListen(listen);
  if (!addr) return addr.error();
  auto impl = std::make_unique<Impl>();
  impl->host = addr->first;
  prometheus::ConfigureListener(impl->http);
  impl->http.Get(".*", [&api](const httplib::Request& req, httplib::Response& res) {
    Params params(req.params.begin(), req.params.end());
    ApiResponse r = api.Handle(req.path, params, req.get_header_value("Authorization"));
    res.status = r.status;
    res.set_content(r.body, r.content_type);
  });
  // The API only reads: any other method is a 405 saying so, not an empty 404.
  auto refuse = [](const httplib::Request&, httplib::Response& res) {
    const ApiResponse r = JsonError(405, "method not allowed: the API answers GET only");
    res.status = r.status;
    res.set_header("Allow", "GET");
    res.set_content(r.body, r.content_type);
  };
  impl->http.Post(".*", refuse);
  impl->http.Put(".*", refuse);
  impl->http.Delete(".*", refuse);
  impl->http.Patch(".*", refuse);
  impl->port = addr->second == 0
                   ? impl->http.bind_to_any_port(impl->host)
                   : (impl->http.bind_to_port(impl->host, addr->second) ? addr->second : -1);
  if (impl->port <= 0)
    return InvalidArgument(
        fmt::format("--listen '{}': cannot bind (in use, or no such address)", listen));
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

int HttpServer::port() const { return impl_->port; }
const std::string& HttpServer::host() const { return impl_->host; }
void HttpServer::Serve() { impl_->http.listen_after_bind(); }
void HttpServer::Stop() {
  if (impl_) impl_->http.stop();
}

}  // namespace gpuledger::server
