#include "agent/http_endpoint.h"

#include <fmt/format.h>
#include <httplib.h>

#include "prometheus/listen.h"
#include "prometheus/listener.h"

namespace gpuledger::agent {

struct HttpEndpoint::Impl {
  httplib::Server server;
  std::string host;
  int port = 0;
};

HttpEndpoint::HttpEndpoint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpEndpoint::~HttpEndpoint() { Stop(); }

Result<std::unique_ptr<HttpEndpoint>> HttpEndpoint::Bind(const std::string& listen,
                                                         Collector& collector,
                                                         Micros healthy_within_us) {
  auto addr = prometheus::ParseListen(listen);
  if (!addr) return addr.error();
  auto impl = std::make_unique<Impl>();
  impl->host = addr->first;
  prometheus::ConfigureListener(impl->server);
  // cpp-httplib (built with zlib) gzips text responses itself when the scraper accepts it.
  impl->server.Get("/metrics", [&collector](const httplib::Request&, httplib::Response& res) {
    auto r = collector.Exposition();
    res.set_content(r->text, "text/plain; version=0.0.4; charset=utf-8");
  });
  impl->server.Get(
      "/healthz", [&collector, healthy_within_us](const httplib::Request&, httplib::Response& res) {
        bool ok = collector.Healthy(healthy_within_us);
        res.status = ok ? 200 : 503;
        res.set_content(ok ? "ok\n" : "collection cycles are not completing\n", "text/plain");
      });
  if (addr->second == 0) {
    impl->port = impl->server.bind_to_any_port(impl->host);
  } else {
    impl->port = impl->server.bind_to_port(impl->host, addr->second) ? addr->second : -1;
  }
  if (impl->port <= 0)
    return InvalidArgument(
        fmt::format("--listen '{}': cannot bind (in use, or no such address)", listen));
  return std::unique_ptr<HttpEndpoint>(new HttpEndpoint(std::move(impl)));
}

int HttpEndpoint::port() const { return impl_->port; }
void HttpEndpoint::Serve() { impl_->server.listen_after_bind(); }
void HttpEndpoint::Stop() {
  if (impl_) impl_->server.stop();
}

}  // namespace gpuledger::agent
