#include "server/http_server.h"

#include <fmt/format.h>

#include "http/server.h"
#include "prometheus/http_stats.h"
#include "prometheus/metric_table.h"
#include "ui/ui_assets.h"

namespace gpuledger::server {
namespace {

http::Response ToResponse(ApiResponse r) {
  http::Response out;
  out.status = r.status;
  out.content_type = std::move(r.content_type);
  out.body = std::move(r.body);
  out.headers = std::move(r.headers);
  out.stream = std::move(r.stream);
  return out;
}

}  // namespace

struct HttpServer::Impl {
  std::unique_ptr<http::Server> http;
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServer::~HttpServer() { Stop(); }

Result<std::unique_ptr<HttpServer>> HttpServer::Bind(const std::string& listen, Api& api,
                                                     Kind kind) {
  auto handle = [&api, kind](const http::Request& req) {
    // The API only reads: any other method is a 405 saying so.
    if (req.method != "GET" && req.method != "HEAD") {
      http::Response r = ToResponse(JsonError(405, "method not allowed: the API answers GET only"));
      r.headers.emplace_back("Allow", "GET, HEAD");
      return r;
    }
    if (kind == Kind::kOpenCost)
      return ToResponse(api.HandleOpenCost(req.path, Params(req.query.begin(), req.query.end())));
    // The web UI's files: static, public (they hold no figure; the pages read the API, with
    // its token when it needs one), never from anywhere but this server.
    if (auto asset = ui::FindAsset(req.path)) {
      http::Response r;
      r.content_type = std::string(asset->content_type);
      r.body = std::string(asset->body);
      r.headers.emplace_back("Cache-Control", "no-cache");
      r.headers.emplace_back("X-Content-Type-Options", "nosniff");
      r.headers.emplace_back("Content-Security-Policy",
                             "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'");
      return r;
    }
    Params params(req.query.begin(), req.query.end());
    // Through the API server's service proxy (`kubectl gpuledger`) the Authorization header is
    // the API server's and is removed on the way: the token then comes as X-Gpuledger-Token.
    const std::string& authorization = req.Header("authorization");
    const std::string& proxied = req.Header("x-gpuledger-token");
    return ToResponse(api.Handle(
        req.path, params,
        authorization.empty() && !proxied.empty() ? "Bearer " + proxied : authorization));
  };
  http::ServerOptions options;
  options.workers = 8;                // concurrent reports; each borrows its own ledger reader
  options.limits.max_body_bytes = 0;  // GETs only: a body is refused at its head (issue 58)
  // Probes and scrapes never queue behind reports: with 16 recommendations at once, /readyz
  // waited 8 s for a worker, past the manifest's 2 s, and load took the pod out of service
  // (issue 58). Each reads at most the ledger's extent, on a connection of its own.
  options.probe_paths = {"/healthz", "/readyz", "/metrics"};
  auto http = http::Server::Bind(listen, std::move(handle), std::move(options));
  if (!http) return http.error();
  // The main listener's connections and requests; the OpenCost one's are counted by path in
  // the API's own series.
  if (kind == Kind::kMain)
    api.AddMetrics([stats = (*http)->stats()] {
      return prometheus::RenderHttpStats(*stats, prometheus::kServerHttpStats);
    });
  auto impl = std::make_unique<Impl>();
  impl->http = std::move(*http);
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

int HttpServer::port() const { return impl_->http->port(); }
const std::string& HttpServer::host() const { return impl_->http->host(); }
void HttpServer::Serve() { impl_->http->Serve(); }
void HttpServer::Stop() {
  if (impl_) impl_->http->Stop();
}

}  // namespace gpuledger::server
