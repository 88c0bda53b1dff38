#include "http/response.h"

#include <fmt/format.h>

#include "http/gzip.h"
#include "http/request.h"

namespace gpuledger::http {
namespace {

const char* ReasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Content Too Large";
    case 422:
      return "Unprocessable Content";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Status";
  }
}

// Worth compressing: text the scraper or the CLI reads, large enough that gzip's 20-byte frame
// and the CPU pay off (a Prometheus exposition shrinks about tenfold).
bool Compressible(const Response& r) {
  return r.body.size() >= 1024 && (r.content_type.rfind("text/", 0) == 0 ||
                                   r.content_type.rfind("application/json", 0) == 0);
}

}  // namespace

bool FieldsAreSafe(const Response& response) {
  bool ok = IsFieldValue(response.content_type);
  for (const auto& [name, value] : response.headers)
    ok = ok && IsToken(name) && IsFieldValue(value);
  return ok;
}

std::string Serialize(const Response& handed, const WireOptions& options) {
  // A field that would end its line early (CR, LF or NUL in a value, a name that is no token)
  // could split the response in two: cpp-httplib wrote such values as they came
  // (CVE-2026-21428, CVE-2023-26130's shape). Nothing reaches the wire then but a 500.
  const bool fields_ok = FieldsAreSafe(handed);
  const Response refused =
      fields_ok ? Response{} : TextResponse(500, "internal error: a response header was malformed");
  const Response& response = fields_ok ? handed : refused;
  const bool streamed = response.stream != nullptr;
  const bool gzip = options.gzip && !streamed && Compressible(response);
  const std::string body = gzip ? http::Gzip(response.body) : std::string();
  const std::string& sent = gzip ? body : response.body;
  std::string out = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\n", response.status,
                                ReasonPhrase(response.status), response.content_type);
  out += streamed ? std::string("Transfer-Encoding: chunked\r\n")
                  : fmt::format("Content-Length: {}\r\n", sent.size());
  if (gzip) out += "Content-Encoding: gzip\r\nVary: Accept-Encoding\r\n";
  if (!options.keep_alive) out += "Connection: close\r\n";
  for (const auto& [name, value] : response.headers) out += fmt::format("{}: {}\r\n", name, value);
  out += "\r\n";
  if (!options.head_only && !streamed) out += sent;
  return out;
}

std::string Chunk(std::string_view part) {
  std::string out = fmt::format("{:x}\r\n", part.size());
  out.reserve(out.size() + part.size() + 2);
  out += part;
  out += "\r\n";
  return out;
}

Response TextResponse(int status, std::string message) {
  Response r;
  r.status = status;
  r.body = std::move(message);
  r.body += '\n';
  return r;
}

}  // namespace gpuledger::http
