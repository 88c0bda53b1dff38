#include <curl/curl.h>
#include <fmt/format.h>

#include <mutex>

#include "http/client.h"
#include "http/curl_handles.h"
#include "io/file_util.h"
#include "k8s/api_transport.h"
#include "k8s/exec_credential.h"

namespace gpuledger::k8s {
namespace {

using http::CurlHandle;
using http::CurlList;

struct StreamState {
  const std::function<bool(std::string_view)>* on_data = nullptr;
  const std::function<bool()>* tick = nullptr;
  std::string* body = nullptr;  // whole-body mode, or non-200 body in stream mode
  CURL* handle = nullptr;
  bool stopped = false;
};

std::size_t WriteCallback(char* data, std::size_t size, std::size_t nmemb, void* user) {
  auto* state = static_cast<StreamState*>(user);
  const std::size_t n = size * nmemb;
  if (state->on_data == nullptr) {
    state->body->append(data, n);
    return n;
  }
  long status = 0;
  curl_easy_getinfo(state->handle, CURLINFO_RESPONSE_CODE, &status);
  if (status != 200) {  // an error body in stream mode: keep it for the message
    state->body->append(data, n);
    return n;
  }
  if (!(*state->on_data)(std::string_view(data, n)) || !(*state->tick)()) {
    state->stopped = true;
    return CURL_WRITEFUNC_ERROR;
  }
  return n;
}

int ProgressCallback(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* state = static_cast<StreamState*>(user);
  if (state->tick != nullptr && *state->tick && !(*state->tick)()) {
    state->stopped = true;
    return 1;  // abort the transfer
  }
  return 0;
}

class CurlTransport : public ApiTransport {
 public:
  CurlTransport(ApiServerConfig config, TransportOptions options)
      : config_(std::move(config)), options_(std::move(options)), handle_(curl_easy_init()) {
    while (!config_.server.empty() && config_.server.back() == '/') {
      config_.server.pop_back();
    }
  }

  Result<HttpResponse> Get(const std::string& target, const std::function<bool()>& tick) override {
    HttpResponse response;
    StreamState state;
    state.body = &response.body;
    state.tick = &tick;
    auto st = Perform(target, state, options_.request_timeout_s);
    if (!st.ok()) {
      return st.error();
    }
    curl_easy_getinfo(handle_.get(), CURLINFO_RESPONSE_CODE, &response.status);
    return response;
  }

  Result<HttpResponse> Post(const std::string& target, const std::string& json_body) override {
    HttpResponse response;
    StreamState state;
    state.body = &response.body;
    auto st = Perform(target, state, options_.request_timeout_s, nullptr, &json_body);
    if (!st.ok()) {
      return st.error();
    }
    curl_easy_getinfo(handle_.get(), CURLINFO_RESPONSE_CODE, &response.status);
    return response;
  }

  Result<StreamEnd> Stream(const std::string& target,
                           const std::function<bool(std::string_view)>& on_data,
                           const std::function<bool()>& tick) override {
    StreamEnd end;
    StreamState state;
    state.on_data = &on_data;
    state.tick = &tick;
    state.body = &end.body;
    CURLcode code = CURLE_OK;
    auto st = Perform(target, state, options_.stream_timeout_s, &code);
    curl_easy_getinfo(handle_.get(), CURLINFO_RESPONSE_CODE, &end.status);
    end.stopped = state.stopped;
    if (st.ok()) {
      end.complete = true;
      return end;
    }
    if (end.status == 0 && !state.stopped) {
      return st.error();
    }  // never got a response
    end.complete = false;
    end.error = st.error().message;
    return end;
  }

 private:
  // A GET, or with `post_body` a POST of that JSON. A credential from an exec plugin that the
  // server refuses (401) is fetched again once, as kubectl does: it may have been revoked or
  // have expired early.
  Status Perform(const std::string& target, StreamState& state, long timeout_s,
                 CURLcode* code_out = nullptr, const std::string* post_body = nullptr) {
    for (int attempt = 0;; ++attempt) {
      state.body->clear();
      Status st = PerformOnce(target, state, timeout_s, code_out, post_body);
      long status = 0;
      curl_easy_getinfo(handle_.get(), CURLINFO_RESPONSE_CODE, &status);
      if (!st.ok() || status != 401 || !config_.exec_credentials || attempt > 0) return st;
      config_.exec_credentials->Invalidate();
    }
  }

  Status PerformOnce(const std::string& target, StreamState& state, long timeout_s,
                     CURLcode* code_out, const std::string* post_body) {
    CURL* h = handle_.get();
    if (h == nullptr) {
      return Internal("curl_easy_init failed");
    }
    curl_easy_reset(h);
    state.handle = h;
    const std::string url = config_.server + target;
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, options_.connect_timeout_s);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, timeout_s);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &WriteCallback);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &state);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, &ProgressCallback);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &state);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    if (post_body != nullptr) {
      curl_easy_setopt(h, CURLOPT_POST, 1L);
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, post_body->data());
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(post_body->size()));
    }
    if (state.on_data == nullptr) {
      // Lists may be gzipped. Watches are not asked to be: a compressed stream can hold an
      // event back in the compressor until more data arrives.
      curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    }
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, config_.insecure_skip_tls_verify ? 0L : 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, config_.insecure_skip_tls_verify ? 0L : 2L);
    curl_blob ca{}, cert{}, key{};
    if (!config_.ca_pem.empty()) {
      ca = {config_.ca_pem.data(), config_.ca_pem.size(), CURL_BLOB_NOCOPY};
      curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &ca);
    }
    // Credentials: the kubeconfig's, or what its exec plugin hands out (kept alive until the
    // transfer ends: curl reads the blobs in place).
    ExecCredential exec;
    if (config_.exec_credentials) {
      auto fetched = config_.exec_credentials->Get();
      if (!fetched) return fetched.error();
      exec = std::move(*fetched);
    }
    const std::string& cert_pem =
        exec.client_cert_pem.empty() ? config_.client_cert_pem : exec.client_cert_pem;
    const std::string& key_pem =
        exec.client_cert_pem.empty() ? config_.client_key_pem : exec.client_key_pem;
    if (!cert_pem.empty()) {
      cert = {const_cast<char*>(cert_pem.data()), cert_pem.size(), CURL_BLOB_NOCOPY};
      key = {const_cast<char*>(key_pem.data()), key_pem.size(), CURL_BLOB_NOCOPY};
      curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
      curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert);
      curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
      curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key);
    }
    CurlList headers(curl_slist_append(nullptr, "Accept: application/json"));
    for (const std::string& extra : options_.extra_headers)
      headers.reset(curl_slist_append(headers.release(), extra.c_str()));
    if (post_body != nullptr) {
      headers.reset(curl_slist_append(headers.release(), "Content-Type: application/json"));
      // No "Expect: 100-continue" round trip before the body: the API server answers at once.
      headers.reset(curl_slist_append(headers.release(), "Expect:"));
    }
    std::string token = config_.bearer_token;
    if (!config_.bearer_token_file.empty()) {
      auto t = ReadFile(config_.bearer_token_file, kSecretFile);
      if (!t) {
        return Unavailable(
            fmt::format("token file {}: {}", config_.bearer_token_file, t.error().message));
      }
      token = *t;
    }
    if (!exec.token.empty()) token = exec.token;
    while (!token.empty() &&
           (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
      token.pop_back();
    }
    std::string auth;
    if (!token.empty()) {
      auth = "Authorization: Bearer " + token;
      headers.reset(curl_slist_append(headers.release(), auth.c_str()));
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
    char error_buffer[CURL_ERROR_SIZE] = {};
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer);
    CURLcode code = curl_easy_perform(h);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);
    if (code_out != nullptr) {
      *code_out = code;
    }
    if (code == CURLE_OK) {
      return Status::Ok();
    }
    return Unavailable(
        fmt::format("{} {}{}: {}", post_body != nullptr ? "POST" : "GET", config_.server, target,
                    error_buffer[0] != '\0' ? error_buffer : curl_easy_strerror(code)));
  }

  ApiServerConfig config_;
  TransportOptions options_;
  CurlHandle handle_;
};

}  // namespace

std::unique_ptr<ApiTransport> MakeCurlTransport(const ApiServerConfig& config,
                                                const TransportOptions& options) {
  http::InitClientOnce();
  return std::make_unique<CurlTransport>(config, options);
}

}  // namespace gpuledger::k8s
