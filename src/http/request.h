#pragma once
// An HTTP/1.1 request as gpuledger's listeners receive it, and its parser (RFC 9112). Pure: the
// server (server.h) reads bytes and hands them here; nothing in this file touches a socket.
//
// The parser is strict where leniency is an attack surface: no bodies sent chunked (a request
// body is only Content-Length, so two parsers can never disagree on where a request ends), no
// obs-folded or malformed header lines, bounded head and body sizes, at most kMaxHeaders
// headers. Every refusal carries the status to answer with and a sentence saying why.

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuledger::http {

struct Request {
  std::string method;                             // as sent ("GET", "HEAD", ...)
  std::string path;                               // percent-decoded, without the query
  std::multimap<std::string, std::string> query;  // decoded ('+' is a space), in order per key
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, values trimmed
  std::string body;
  bool keep_alive = true;     // HTTP/1.1 unless "Connection: close"; 1.0 only if asked
  bool accepts_gzip = false;  // "Accept-Encoding" names gzip (or *) with a q above 0

  // The first header of that name (lower-case), or "" when absent.
  const std::string& Header(std::string_view lower_name) const;
};

struct RequestLimits {
  std::size_t max_head_bytes = 16 * 1024;  // request line and headers with their CRLFs
  std::size_t max_body_bytes = 1024 * 1024;
  // When set, the only paths whose requests may carry a body: any other is refused (413) as
  // soon as its head arrives, before a byte of its body is held (issue 58).
  std::set<std::string> body_paths;
};

inline constexpr std::size_t kMaxHeaders = 100;

// What the bytes received so far amount to.
struct ParseOutcome {
  enum class Kind { kIncomplete, kComplete, kRefused };
  Kind kind = Kind::kIncomplete;
  Request request;           // when kComplete
  std::size_t consumed = 0;  // bytes of `buffer` the request took (pipelined ones follow)
  int status = 0;            // when kRefused: 400, 413, 431, 501 or 505
  std::string reason;        // when kRefused: what was wrong, for the response body
  // When kIncomplete with the whole head received: the body it declared, still to come.
  std::size_t pending_body_bytes = 0;
};

// Parses the first request in `buffer`. kIncomplete while the head or the body is still short
// of its end and within the limits; a head or body past its limit is refused as soon as the
// bytes show it, so a client cannot make the server hold more than the limits. The target may
// be in origin form ("/path?query") or absolute form ("http://host/path?query", RFC 9112
// 3.2.2); an HTTP/1.1 request names exactly one Host, an HTTP/1.0 one at most one. A path
// holding an encoded '/' (%2F) is refused rather than routed as another path.
ParseOutcome ParseRequest(std::string_view buffer, const RequestLimits& limits);

// RFC 9110 field grammar, for requests read and responses written: a method or header name is
// a token; a header value holds visible characters, spaces, tabs and obs-text, no other control
// (no CR, LF or NUL, which would end the line or split the message).
bool IsToken(std::string_view s);
bool IsFieldValue(std::string_view s);

// Percent-decoding of a path (`plus_is_space` false) or a query component (true); false on a
// malformed escape or a decoded NUL.
bool PercentDecode(std::string_view in, bool plus_is_space, std::string& out);

}  // namespace gpuledger::http
