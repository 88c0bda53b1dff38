#include "prometheus/http_get.h"

#include <charconv>
#include <chrono>

#include <fmt/format.h>
#include <httplib.h>

#include "prometheus/gzip.h"

namespace gpuledger::prometheus {

Result<HttpUrl> ParseHttpUrl(std::string_view url) {
  HttpUrl out;
  out.text = std::string(url);
  auto bad = [&](std::string_view why) {
    return InvalidArgument(
        fmt::format("URL '{}': {} (expected http://HOST[:PORT][/PATH], e.g. "
                    "http://localhost:9400/metrics)",
                    url, why));
  };
  constexpr std::string_view kScheme = "http://";
  if (url.rfind("https://", 0) == 0) return bad("https is not supported");
  if (url.rfind(kScheme, 0) != 0) return bad("not an http:// URL");
  std::string_view rest = url.substr(kScheme.size());
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) out.path = std::string(rest.substr(slash));
  if (authority.find('@') != std::string_view::npos) return bad("credentials are not supported");
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad("unclosed '['");
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return bad("expected ':' after ']'");
      port = after.substr(1);
    }
  } else {
    const std::size_t colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (out.host.empty()) return bad("no host");
  if (!port.empty() || authority.find(':') != std::string_view::npos) {
    int p = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() || p <= 0 ||
        p > 65535)
      return bad("bad port");
    out.port = p;
  }
  return out;
}

Result<std::string> HttpGet(const HttpUrl& url, Micros timeout_us, std::size_t max_bytes) {
  httplib::Client http(url.host, url.port);
  const auto sec = static_cast<time_t>(timeout_us / kMicrosPerSecond);
  const auto usec = static_cast<time_t>(timeout_us % kMicrosPerSecond);
  http.set_connection_timeout(sec, usec);
  http.set_read_timeout(sec, usec);
  http.set_write_timeout(sec, usec);
  http.set_keep_alive(false);
  // Inflated below, under the cap: cpp-httplib's own inflate has none.
  http.set_decompress(false);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(timeout_us);
  std::string body;
  bool too_big = false;
  bool too_slow = false;
  auto r = http.Get(
      url.path, {{"Accept-Encoding", "gzip"}}, [](const httplib::Response&) { return true; },
      [&](const char* data, std::size_t n) {
        if (body.size() + n > max_bytes) {
          too_big = true;
        } else if (std::chrono::steady_clock::now() > deadline) {
          too_slow = true;
        } else {
          body.append(data, n);
        }
        return !too_big && !too_slow;
      });
  if (too_big)
    return Unavailable(
        fmt::format("GET {}: the body is larger than {} bytes", url.text, max_bytes));
  // cpp-httplib reports a connect or read timeout as a plain connection or read error: one that
  // comes at the deadline is the timeout.
  const bool late = std::chrono::steady_clock::now() + std::chrono::milliseconds(10) >= deadline;
  if (too_slow || (!r && late))
    return Unavailable(fmt::format("GET {}: timed out after {} ms", url.text, timeout_us / 1000));
  if (!r) return Unavailable(fmt::format("GET {}: {}", url.text, httplib::to_string(r.error())));
  if (r->status != 200) return Unavailable(fmt::format("GET {}: HTTP {}", url.text, r->status));
  const bool gzipped = body.size() >= 2 && static_cast<unsigned char>(body[0]) == 0x1f &&
                       static_cast<unsigned char>(body[1]) == 0x8b;
  // The magic alone decides (a proxy may drop Content-Encoding; no exposition starts 0x1f 0x8b).
  if (gzipped) {
    auto text = prometheus::Gunzip(body, max_bytes);
    if (!text) return Unavailable(fmt::format("GET {}: {}", url.text, text.error().message));
    return std::move(*text);
  }
  return body;
}

}  // namespace gpuledger::prometheus
