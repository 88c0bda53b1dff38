#pragma once
// An HTTP/1.1 response as a handler returns it, and its bytes on the wire.

#include <string>
#include <utility>
#include <vector>

namespace gpuledger::http {

struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra ones, e.g. Allow
};

struct WireOptions {
  bool head_only = false;  // a HEAD request: the headers of the GET, no body
  bool keep_alive = true;  // false adds "Connection: close"
  bool gzip = false;       // the client accepts gzip: text and JSON of 1 KiB or more go gzipped
};

// Status line, headers (Content-Type, Content-Length, the extra ones) and body.
std::string Serialize(const Response& response, const WireOptions& options);

// A plain-text response with `status` and `message` (one line, newline added).
Response TextResponse(int status, std::string message);

}  // namespace gpuledger::http
