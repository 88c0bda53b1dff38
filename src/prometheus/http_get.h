#pragma once
// Fetching an exposition over HTTP, bounded: the server's scrapes of its agents
// (ingest::FetchMetrics) and the agent's reads of dcgm-exporter (sources/dcgm), through the one
// HTTP client (http/client.h): http:// or https:// (verified against `auth`'s CA, else the
// system's), with the credentials `auth` names.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/units.h"
#include "http/client.h"

namespace gpuledger::prometheus {

// dcgm-exporter gives a few hundred kB for 8 GPUs with every profiling field; an agent ~1.7 MB
// for 200 containers. A body past this is not an exporter's.
inline constexpr std::size_t kMaxBodyBytes = 16u << 20;

struct HttpUrl {
  std::string host;  // name or address; IPv6 without the brackets
  int port = 80;
  std::string path = "/metrics";  // with the query, if any; "/metrics" when the URL has none
  std::string text;               // the URL to fetch, "/metrics" added when it had no path
};

// "http[s]://HOST[:PORT][/PATH]" (HOST may be "[v6]"), parsed by libcurl's URL API;
// kInvalidArgument naming the URL otherwise.
Result<HttpUrl> ParseHttpUrl(std::string_view url);

// GET `url` within `timeout_us` for the whole exchange (connect, headers, body: a body trickling
// in ends at the deadline), gzip accepted and inflated under `max_bytes`. The body, or
// kUnavailable naming the URL: connection refused, an HTTP status other than 200, corrupt gzip,
// a body past `max_bytes`, or "timed out". Thread-safe (no shared state).
Result<std::string> HttpGet(const HttpUrl& url, Micros timeout_us,
                            std::size_t max_bytes = kMaxBodyBytes,
                            const http::ClientAuth& auth = {});

}  // namespace gpuledger::prometheus
