#include "http/client.h"

#include <unistd.h>

#include <curl/curl.h>
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>

#include "common/strings.h"
#include "http/curl_handles.h"
#include "io/file_util.h"

namespace gpuledger::http {
namespace {

std::string Part(CURLU* url, CURLUPart which, unsigned flags = 0) {
  char* raw = nullptr;
  if (curl_url_get(url, which, &raw, flags) != CURLUE_OK || raw == nullptr) return "";
  return UrlPart(raw).get();
}

struct Sink {
  std::string body;
  std::size_t max_bytes = 0;
  bool too_big = false;
};

// Appends each pair to the URL's query through the URL API, which encodes it.
void AppendQuery(CURLU* url, const std::vector<std::pair<std::string, std::string>>& query) {
  for (const auto& [name, value] : query) {
    const std::string pair = name + "=" + value;
    curl_url_set(url, CURLUPART_QUERY, pair.c_str(), CURLU_APPENDQUERY | CURLU_URLENCODE);
  }
}

std::size_t Write(char* data, std::size_t size, std::size_t n, void* user) {
  auto* sink = static_cast<Sink*>(user);
  if (sink->body.size() + size * n > sink->max_bytes) {
    sink->too_big = true;
    return CURL_WRITEFUNC_ERROR;
  }
  sink->body.append(data, size * n);
  return size * n;
}

}  // namespace

void InitClientOnce() {
  static std::once_flag once;  // NOLINT: libcurl's global init is process-wide by design
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

Result<ParsedUrl> ParseUrl(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument(
        fmt::format("URL '{}': {} (expected http[s]://HOST[:PORT][/PATH])", text, why));
  };
  UrlHandle url(curl_url());
  if (!url) return Internal("curl_url failed");
  const std::string owned(text);
  if (const CURLUcode rc = curl_url_set(url.get(), CURLUPART_URL, owned.c_str(), 0);
      rc != CURLUE_OK)
    return bad(curl_url_strerror(rc));
  ParsedUrl out;
  out.scheme = Part(url.get(), CURLUPART_SCHEME);
  if (out.scheme != "http" && out.scheme != "https")
    return bad(fmt::format("scheme '{}' is not http or https", out.scheme));
  out.host = Part(url.get(), CURLUPART_HOST);
  if (out.host.size() >= 2 && out.host.front() == '[' && out.host.back() == ']')
    out.host = out.host.substr(1, out.host.size() - 2);
  if (out.host.empty()) return bad("no host");
  const std::string port = Part(url.get(), CURLUPART_PORT, CURLU_DEFAULT_PORT);
  out.port = std::atoi(port.c_str());
  if (out.port <= 0 || out.port > 65535) return bad("bad port");
  out.path = Part(url.get(), CURLUPART_PATH);
  if (out.path.empty()) out.path = "/";
  if (const std::string query = Part(url.get(), CURLUPART_QUERY); !query.empty())
    out.path += "?" + query;
  // Shown without credentials: a URL with user:password@ must not put them in a log.
  curl_url_set(url.get(), CURLUPART_USER, nullptr, 0);
  curl_url_set(url.get(), CURLUPART_PASSWORD, nullptr, 0);
  out.shown = Part(url.get(), CURLUPART_URL);
  return out;
}

std::string EncodeQuery(const std::vector<std::pair<std::string, std::string>>& query) {
  UrlHandle url(curl_url());
  curl_url_set(url.get(), CURLUPART_URL, "http://localhost/", 0);
  AppendQuery(url.get(), query);
  const std::string encoded = Part(url.get(), CURLUPART_QUERY);
  return encoded.empty() ? encoded : "?" + encoded;
}

Result<ClientResponse> Get(const ClientRequest& request, const ClientAuth& auth) {
  auto parsed = ParseUrl(request.url);
  if (!parsed) return parsed.error();
  UrlHandle url(curl_url());
  curl_url_set(url.get(), CURLUPART_URL, request.url.c_str(), 0);
  AppendQuery(url.get(), request.query);
  const std::string full = Part(url.get(), CURLUPART_URL);

  InitClientOnce();
  CurlHandle h(curl_easy_init());
  if (!h) return Internal("curl_easy_init failed");
  curl_easy_setopt(h.get(), CURLOPT_URL, full.c_str());
  curl_easy_setopt(h.get(), CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout_us / 1000));
  curl_easy_setopt(h.get(), CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(request.connect_timeout_us / 1000));
  curl_easy_setopt(h.get(), CURLOPT_ACCEPT_ENCODING, "");  // gzip and deflate, inflated by curl
  Sink sink;
  sink.max_bytes = request.max_bytes;
  curl_easy_setopt(h.get(), CURLOPT_WRITEFUNCTION, &Write);
  curl_easy_setopt(h.get(), CURLOPT_WRITEDATA, &sink);
  if (!auth.ca_file.empty()) curl_easy_setopt(h.get(), CURLOPT_CAINFO, auth.ca_file.c_str());
  if (!auth.key_file.empty() && auth.cert_file.empty())
    return InvalidArgument(
        fmt::format("client key {} given without its certificate", auth.key_file));
  // Missing files are named before any connection (curl would only try them in a handshake).
  for (const std::string* file : {&auth.cert_file, &auth.key_file})
    if (!file->empty() && ::access(file->c_str(), R_OK) != 0)
      return InvalidArgument(fmt::format("client {} {}: {}",
                                         file == &auth.cert_file ? "certificate" : "key", *file,
                                         std::strerror(errno)));
  if (!auth.cert_file.empty()) {
    curl_easy_setopt(h.get(), CURLOPT_SSLCERT, auth.cert_file.c_str());
    if (!auth.key_file.empty()) curl_easy_setopt(h.get(), CURLOPT_SSLKEY, auth.key_file.c_str());
  }
  if (auth.insecure_skip_verify) {
    curl_easy_setopt(h.get(), CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h.get(), CURLOPT_SSL_VERIFYHOST, 0L);
  }
  CurlList headers;
  std::string authorization;
  if (!auth.bearer_token_file.empty()) {
    auto token = ReadTokenFile(auth.bearer_token_file);
    if (!token)
      return InvalidArgument(
          fmt::format("token file {}: {}", auth.bearer_token_file, token.error().message));
    authorization = "Authorization: Bearer " + *token;
    headers.reset(curl_slist_append(nullptr, authorization.c_str()));
    curl_easy_setopt(h.get(), CURLOPT_HTTPHEADER, headers.get());
  }
  std::string password;
  if (!auth.basic_user.empty()) {
    if (!auth.basic_password_file.empty()) {
      auto read = ReadFile(auth.basic_password_file, kSecretFile);
      if (!read)
        return InvalidArgument(
            fmt::format("password file {}: {}", auth.basic_password_file, read.error().message));
      password = std::string(Trim(*read));
    }
    curl_easy_setopt(h.get(), CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(h.get(), CURLOPT_USERNAME, auth.basic_user.c_str());
    curl_easy_setopt(h.get(), CURLOPT_PASSWORD, password.c_str());
  }
  char error[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(h.get(), CURLOPT_ERRORBUFFER, error);
  const CURLcode code = curl_easy_perform(h.get());
  if (sink.too_big)
    return Unavailable(
        fmt::format("GET {}: the body is larger than {} bytes", parsed->shown, request.max_bytes));
  if (code == CURLE_OPERATION_TIMEDOUT)
    return Unavailable(
        fmt::format("GET {}: timed out after {} ms", parsed->shown, request.timeout_us / 1000));
  if (code == CURLE_SSL_CERTPROBLEM)  // the caller's certificate or key, not the peer
    return InvalidArgument(fmt::format("client certificate {}{}: {}", auth.cert_file,
                                       auth.key_file.empty() ? "" : " (key " + auth.key_file + ")",
                                       error[0] != '\0' ? error : curl_easy_strerror(code)));
  if (code != CURLE_OK)
    return Unavailable(fmt::format("GET {}: {}", parsed->shown,
                                   error[0] != '\0' ? error : curl_easy_strerror(code)));
  ClientResponse response;
  curl_easy_getinfo(h.get(), CURLINFO_RESPONSE_CODE, &response.status);
  response.body = std::move(sink.body);
  return response;
}

}  // namespace gpuledger::http
