#include "prometheus/http_get.h"

#include <fmt/format.h>

#include "http/client.h"
#include "http/gzip.h"

namespace gpuledger::prometheus {

Result<HttpUrl> ParseHttpUrl(std::string_view url) {
  auto parsed = http::ParseUrl(url);
  if (!parsed)
    return InvalidArgument(parsed.error().message + ", e.g. http://localhost:9400/metrics");
  HttpUrl out;
  out.host = parsed->host;
  out.port = parsed->port;
  // dcgm-exporter's path when none is given.
  const bool no_path = parsed->path == "/" && !std::string_view(url).ends_with("/");
  out.path = no_path ? "/metrics" : parsed->path;
  out.text = no_path ? std::string(url) + "/metrics" : std::string(url);
  return out;
}

Result<std::string> HttpGet(const HttpUrl& url, Micros timeout_us, std::size_t max_bytes,
                            const http::ClientAuth& auth) {
  http::ClientRequest request;
  request.url = url.text;
  request.timeout_us = timeout_us;
  request.connect_timeout_us = timeout_us;
  request.max_bytes = max_bytes;
  auto r = http::Get(request, auth);
  if (!r) return r.error();
  if (r->status != 200) return Unavailable(fmt::format("GET {}: HTTP {}", url.text, r->status));
  std::string& body = r->body;
  const bool gzipped = body.size() >= 2 && static_cast<unsigned char>(body[0]) == 0x1f &&
                       static_cast<unsigned char>(body[1]) == 0x8b;
  // The magic alone decides (a proxy may drop Content-Encoding, so the client does not inflate
  // it; no exposition starts 0x1f 0x8b).
  if (gzipped) {
    auto text = http::Gunzip(body, max_bytes);
    if (!text) return Unavailable(fmt::format("GET {}: {}", url.text, text.error().message));
    return std::move(*text);
  }
  return std::move(body);
}

}  // namespace gpuledger::prometheus
