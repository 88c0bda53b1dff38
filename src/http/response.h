#pragma once
// An HTTP/1.1 response as a handler returns it, and its bytes on the wire.

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuledger::http {

// Sends one part of a streamed body and waits until the client has taken it: false when the
// client is gone (the stream stops).
using SendPart = std::function<bool(std::string_view part)>;

struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra ones, e.g. Allow
  // When set, the body is made as it is sent (Transfer-Encoding: chunked; `body` unused), at the
  // client's pace: called on the handler's worker once the head is written, it sends the parts
  // in order and returns true when the body is whole, false to cut it (the connection closes
  // without the last chunk, so the client knows the body is incomplete). Never gzipped.
  std::function<bool(const SendPart& send)> stream;
};

struct WireOptions {
  bool head_only = false;  // a HEAD request: the headers of the GET, no body
  bool keep_alive = true;  // false adds "Connection: close"
  bool gzip = false;       // the client accepts gzip: text and JSON of 1 KiB or more go gzipped
};

// Whether every header field of `response` can go on the wire as it is (no CR, LF or NUL in a
// value, names that are tokens); Serialize answers a 500 instead of one that cannot.
bool FieldsAreSafe(const Response& response);

// Status line, headers (Content-Type, Content-Length, the extra ones) and body; of a streamed
// response, the head alone (Transfer-Encoding: chunked).
std::string Serialize(const Response& response, const WireOptions& options);

// A part of a chunked body on the wire (RFC 9112 7.1): its size in hex, CRLF, the bytes, CRLF.
std::string Chunk(std::string_view part);
// The end of a chunked body: the zero-size chunk and no trailers.
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

// A plain-text response with `status` and `message` (one line, newline added).
Response TextResponse(int status, std::string message);

}  // namespace gpuledger::http
