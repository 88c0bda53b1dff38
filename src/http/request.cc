#include "http/request.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "common/strings.h"

namespace gpuledger::http {
namespace {

constexpr std::string_view kCrlf = "\r\n";

// RFC 9110 tchar: the characters of a method or a header name.
bool IsTokenChar(char c) {
  if (std::isalnum(static_cast<unsigned char>(c)) != 0) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  });
  return out;
}

// Whether a comma-separated header value lists `token` (case-insensitive), e.g. Connection.
bool ListsToken(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    const auto comma = value.find(',');
    const std::string_view item = TrimOws(value.substr(0, comma));
    if (Lower(item) == token) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

// Accept-Encoding: gzip (or *) listed with a weight above zero.
bool AcceptsGzip(std::string_view value) {
  while (!value.empty()) {
    const auto comma = value.find(',');
    std::string_view item = TrimOws(value.substr(0, comma));
    const auto semi = item.find(';');
    const std::string coding = Lower(TrimOws(item.substr(0, semi)));
    if (coding == "gzip" || coding == "*") {
      if (semi == std::string_view::npos) return true;
      std::string weight = Lower(TrimOws(item.substr(semi + 1)));
      weight.erase(std::remove(weight.begin(), weight.end(), ' '), weight.end());
      // q=0, q=0.0, q=0.000: refused; any other weight accepts.
      if (weight.rfind("q=", 0) != 0) return true;
      const std::string_view q = std::string_view(weight).substr(2);
      if (q.find_first_not_of("0.") != std::string_view::npos) return true;
    }
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

ParseOutcome Refuse(int status, std::string reason) {
  ParseOutcome out;
  out.kind = ParseOutcome::Kind::kRefused;
  out.status = status;
  out.reason = std::move(reason);
  return out;
}

// The request target in origin form ("/path?query") or absolute form
// ("http://host:port/path?query", its authority dropped), decoded into `request`.
std::string ParseTarget(std::string_view target, Request& request) {
  for (std::string_view scheme : {"http://", "https://"})
    if (target.size() > scheme.size() && Lower(target.substr(0, scheme.size())) == scheme) {
      target.remove_prefix(scheme.size());
      const auto path = target.find_first_of("/?");
      if (path == 0) return "the absolute request target has no host";
      target = path == std::string_view::npos ? std::string_view("/") : target.substr(path);
      if (target.front() == '?') return "the absolute request target has a query but no path";
      break;
    }
  if (target.empty() || target.front() != '/')
    return fmt::format("the request target must be a path starting with '/', got '{}'",
                       target.substr(0, 64));
  const auto question = target.find('?');
  const std::string_view raw_path = target.substr(0, question);
  if (!PercentDecode(raw_path, false, request.path))
    return "the path holds a malformed percent escape";
  // Decoded, "/api%2Fv1/report" would be routed as "/api/v1/report", a path it is not: a
  // proxy or a rule in front that matches paths would see one and the server answer another.
  for (std::size_t i = 0; i + 2 < raw_path.size(); ++i)
    if (raw_path[i] == '%' && raw_path[i + 1] == '2' &&
        (raw_path[i + 2] == 'F' || raw_path[i + 2] == 'f'))
      return "the path holds an encoded '/' (%2F)";
  if (question == std::string_view::npos) return {};
  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    if (!pair.empty()) {
      const auto eq = pair.find('=');
      std::string key, value;
      if (!PercentDecode(pair.substr(0, eq), true, key) ||
          (eq != std::string_view::npos && !PercentDecode(pair.substr(eq + 1), true, value)))
        return fmt::format("the query parameter '{}' holds a malformed percent escape",
                           pair.substr(0, std::min<std::size_t>(eq, 64)));
      request.query.emplace(std::move(key), std::move(value));
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return {};
}

}  // namespace

bool IsToken(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), IsTokenChar);
}

bool IsFieldValue(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u == '\t' || (u >= 0x20 && u != 0x7f);
  });
}

const std::string& Request::Header(std::string_view lower_name) const {
  static const std::string kEmpty;
  for (const auto& [name, value] : headers)
    if (name == lower_name) return value;
  return kEmpty;
}

bool PercentDecode(std::string_view in, bool plus_is_space, std::string& out) {
  out.clear();
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return false;
      const int hi = HexDigitValue(in[i + 1]), lo = HexDigitValue(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      c = static_cast<char>(hi * 16 + lo);
      if (c == '\0') return false;
      i += 2;
    } else if (c == '+' && plus_is_space) {
      c = ' ';
    }
    out.push_back(c);
  }
  return true;
}

ParseOutcome ParseRequest(std::string_view buffer, const RequestLimits& limits) {
  // Empty lines before a request line are skipped (RFC 9112 section 2.2).
  std::size_t start = 0;
  while (buffer.substr(start, 2) == kCrlf) start += 2;
  const auto head_end = buffer.find("\r\n\r\n", start);
  if (head_end == std::string_view::npos) {
    if (buffer.size() - start > limits.max_head_bytes)
      return Refuse(431,
                    fmt::format("the request head is longer than {} bytes", limits.max_head_bytes));
    return {};
  }
  if (head_end + 4 - start > limits.max_head_bytes)
    return Refuse(431,
                  fmt::format("the request head is longer than {} bytes", limits.max_head_bytes));
  std::string_view head = buffer.substr(start, head_end + 2 - start);  // each line ends in CRLF

  ParseOutcome out;
  Request& request = out.request;
  // Request line: METHOD SP target SP HTTP/1.x
  const auto line_end = head.find(kCrlf);
  const std::string_view line = head.substr(0, line_end);
  head.remove_prefix(line_end + 2);
  const auto sp1 = line.find(' ');
  const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return Refuse(400, "the request line is not 'METHOD /path HTTP/1.1'");
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(method)) return Refuse(400, "the request method is not a token");
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || version[6] != '.' ||
      std::isdigit(static_cast<unsigned char>(version[5])) == 0 ||
      std::isdigit(static_cast<unsigned char>(version[7])) == 0)
    return Refuse(400, "the request line does not end in an HTTP version");
  if (version != "HTTP/1.1" && version != "HTTP/1.0")
    return Refuse(505, fmt::format("{} is not served; use HTTP/1.1", version));
  if (!IsFieldValue(target) || target.find_first_of(" \t") != std::string_view::npos)
    return Refuse(400, "the request target holds control characters");
  request.method = std::string(method);
  if (std::string why = ParseTarget(target, request); !why.empty()) return Refuse(400, why);

  // Header lines.
  while (!head.empty()) {
    const auto end = head.find(kCrlf);
    const std::string_view field = head.substr(0, end);
    head.remove_prefix(end + 2);
    if (field.front() == ' ' || field.front() == '\t')
      return Refuse(400, "a header line is folded (starts with whitespace)");
    const auto colon = field.find(':');
    if (colon == std::string_view::npos || !IsToken(field.substr(0, colon)))
      return Refuse(400,
                    fmt::format("the header line '{}' is not 'Name: value'", field.substr(0, 64)));
    const std::string_view value = TrimOws(field.substr(colon + 1));
    if (!IsFieldValue(value))
      return Refuse(
          400, fmt::format("the header '{}' holds control characters", field.substr(0, colon)));
    if (request.headers.size() == kMaxHeaders)
      return Refuse(431, fmt::format("more than {} header lines", kMaxHeaders));
    request.headers.emplace_back(Lower(field.substr(0, colon)), std::string(value));
  }

  // RFC 9112 3.2: a client sends exactly one Host (HTTP/1.0 clients may send none).
  const auto hosts = std::count_if(request.headers.begin(), request.headers.end(),
                                   [](const auto& h) { return h.first == "host"; });
  if (hosts > 1) return Refuse(400, "the request names Host more than once");
  if (hosts == 0 && version == "HTTP/1.1") return Refuse(400, "the HTTP/1.1 request has no Host");

  // The body: Content-Length only.
  std::size_t body_bytes = 0;
  bool length_seen = false;
  for (const auto& [name, value] : request.headers) {
    if (name == "transfer-encoding")
      return Refuse(501,
                    "request bodies sent with Transfer-Encoding are not accepted; send "
                    "Content-Length");
    if (name != "content-length") continue;
    std::size_t n = 0;
    const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (value.empty() || ec != std::errc() || ptr != value.data() + value.size())
      return Refuse(ec == std::errc::result_out_of_range ? 413 : 400,
                    fmt::format("Content-Length '{}' is not a byte count", value.substr(0, 32)));
    if (length_seen && n != body_bytes) return Refuse(400, "two Content-Length headers disagree");
    length_seen = true;
    body_bytes = n;
  }
  if (body_bytes > limits.max_body_bytes)
    return Refuse(413, fmt::format("the request body of {} bytes is over the limit of {}",
                                   body_bytes, limits.max_body_bytes));
  if (body_bytes > 0 && !limits.body_paths.empty() && !limits.body_paths.count(request.path))
    return Refuse(413, fmt::format("{} takes no request body", request.path));
  const std::size_t body_start = head_end + 4;
  if (buffer.size() - body_start < body_bytes) {
    ParseOutcome waiting;
    waiting.pending_body_bytes = body_bytes;
    return waiting;
  }
  request.body = std::string(buffer.substr(body_start, body_bytes));

  const std::string& connection = request.Header("connection");
  request.keep_alive = version == "HTTP/1.1" ? !ListsToken(connection, "close")
                                             : ListsToken(connection, "keep-alive");
  request.accepts_gzip = AcceptsGzip(request.Header("accept-encoding"));
  out.kind = ParseOutcome::Kind::kComplete;
  out.consumed = body_start + body_bytes;
  return out;
}

}  // namespace gpuledger::http
