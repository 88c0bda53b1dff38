#include "agent/http_endpoint.h"

#include <fmt/format.h>

#include "http/server.h"
#include "prometheus/http_stats.h"
#include "prometheus/metric_table.h"

namespace gpuledger::agent {

struct HttpEndpoint::Impl {
  std::unique_ptr<http::Server> http;
  std::shared_ptr<const http::ServerStats> stats;  // set once bound; read by /metrics
};

HttpEndpoint::HttpEndpoint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpEndpoint::~HttpEndpoint() { Stop(); }

Result<std::unique_ptr<HttpEndpoint>> HttpEndpoint::Bind(const std::string& listen,
                                                         Collector& collector,
                                                         Micros healthy_within_us) {
  auto impl = std::make_unique<Impl>();
  auto handle = [&collector, healthy_within_us, self = impl.get()](const http::Request& req) {
    if (req.method != "GET" && req.method != "HEAD") {
      http::Response r = http::TextResponse(405, "the agent answers GET only");
      r.headers.emplace_back("Allow", "GET, HEAD");
      return r;
    }
    if (req.path == "/metrics") {
      // The server gzips it when the scraper accepts gzip (about tenfold smaller).
      http::Response r;
      r.content_type = "text/plain; version=0.0.4; charset=utf-8";
      r.body = collector.Exposition()->text;
      if (self->stats)
        r.body += prometheus::RenderHttpStats(*self->stats, prometheus::kAgentHttpStats);
      return r;
    }
    if (req.path == "/healthz") {
      const bool ok = collector.Healthy(healthy_within_us);
      return ok ? http::TextResponse(200, "ok")
                : http::TextResponse(503, "collection cycles are not completing");
    }
    return http::TextResponse(
        404, fmt::format("no endpoint {}: the agent serves /metrics and /healthz", req.path));
  };
  http::ServerOptions options;
  options.workers = 2;                 // scrapes copy a pre-rendered exposition
  options.limits.max_body_bytes = 0;   // GETs only: a body is refused at its head (issue 58)
  options.probe_paths = {"/healthz"};  // liveness never queues behind a scrape
  auto http = http::Server::Bind(listen, std::move(handle), std::move(options));
  if (!http) return http.error();
  impl->stats = (*http)->stats();
  impl->http = std::move(*http);
  return std::unique_ptr<HttpEndpoint>(new HttpEndpoint(std::move(impl)));
}

int HttpEndpoint::port() const { return impl_->http->port(); }
void HttpEndpoint::Serve() { impl_->http->Serve(); }
void HttpEndpoint::Stop() {
  if (impl_) impl_->http->Stop();
}

}  // namespace gpuledger::agent
