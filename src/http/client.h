#pragma once
// The one outgoing HTTP client (libcurl): the CLI's `--server` reads, the server's Prometheus
// source, the server's scrapes of its agents and the agent's reads of dcgm-exporter. http:// and
// https:// (TLS verified against a CA bundle or the system store), bearer tokens re-read from
// their file on every request (tokens are rotated), basic auth, gzip, and bounds on time and
// body size. URLs are parsed by libcurl's URL API, never by hand.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/units.h"

namespace gpuledger::http {

// Credentials and trust for one peer. Every field is optional.
struct ClientAuth {
  std::string bearer_token_file;  // "Authorization: Bearer <its content, trimmed>"
  std::string basic_user;         // with basic_password_file: basic auth
  std::string basic_password_file;
  std::string ca_file;  // PEM bundle to verify the server with; "": the system store
  bool insecure_skip_verify = false;
  // A client certificate (PEM) for servers that ask for one (mTLS), and its key; the key may
  // be in cert_file itself. A key without a certificate is refused.
  std::string cert_file;
  std::string key_file;
};

struct ClientRequest {
  std::string url;  // http:// or https://; its query is kept, `query` appended
  std::vector<std::pair<std::string, std::string>> query;  // URL-encoded here
  Micros timeout_us = 60 * kMicrosPerSecond;               // the whole exchange
  Micros connect_timeout_us = 5 * kMicrosPerSecond;
  std::size_t max_bytes = 64u << 20;  // the body as delivered (inflated), at most
};

struct ClientResponse {
  long status = 0;
  std::string body;
};

struct ParsedUrl {
  std::string scheme;  // "http" or "https"
  std::string host;    // IPv6 without brackets
  int port = 0;        // the URL's, else the scheme's default
  std::string path;    // with the query, "/" when none
  std::string shown;   // the URL without user:password, for messages
};

// kInvalidArgument naming the URL and what is wrong: not http(s), no host, a bad port.
Result<ParsedUrl> ParseUrl(std::string_view url);

// One GET. kInvalidArgument for a bad URL or an unreadable or unusable credential file (a token,
// a password, a client certificate or key, named in the message); kUnavailable naming
// the URL for connection, TLS and timeout failures (curl's words: "SSL certificate problem:
// unable to get local issuer certificate") and for a body past max_bytes. Any HTTP status is a
// successful return. Thread-safe (no shared state).
Result<ClientResponse> Get(const ClientRequest& request, const ClientAuth& auth = {});

// "?name=value&..." with each part encoded as Get encodes ClientRequest::query; "" for none. For
// requests made by another transport (the API server's, k8s/api_transport.h).
std::string EncodeQuery(const std::vector<std::pair<std::string, std::string>>& query);

// Call before starting threads (libcurl's global init).
void InitClientOnce();

}  // namespace gpuledger::http
