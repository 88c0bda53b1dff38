#pragma once
// HTTP to the API server, as three calls: a GET of a whole body (lists), a streamed GET
// (watches) and a POST of a JSON object (creating Events). One transport per thread; an
// instance is not thread-safe. The real one is
// libcurl (curl_transport.cc); tests run it against testing/fake_apiserver over plain http.

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "k8s/kube_config.h"

namespace gpuledger::k8s {

struct HttpResponse {
  long status = 0;
  std::string body;
};

// How a stream ended: `status` is the HTTP status; `complete` is true when the server ended
// the body cleanly (a watch timing out), false when the connection broke mid-body.
struct StreamEnd {
  long status = 0;
  bool complete = false;
  bool stopped = false;  // the caller's on_data or tick asked to stop
  std::string body;      // the body of a non-200 response
  std::string error;     // transport error text when !complete
};

class ApiTransport {
 public:
  virtual ~ApiTransport() = default;
  // `target` is the path and query ("/api/v1/pods?limit=500"). kUnavailable for connection and
  // TLS failures (naming the server); any HTTP status is a successful return. `tick`, when
  // set, runs about once a second and aborts the request by returning false.
  virtual Result<HttpResponse> Get(const std::string& target,
                                   const std::function<bool()>& tick = {}) = 0;
  // Streams a 200 response's body to `on_data` as it arrives (return false to stop).
  // `tick` runs about once a second while idle and between chunks (return false to stop).
  // Transport failures before any response are errors; failures mid-body are a StreamEnd with
  // complete == false.
  virtual Result<StreamEnd> Stream(const std::string& target,
                                   const std::function<bool(std::string_view)>& on_data,
                                   const std::function<bool()>& tick) = 0;
  // POSTs `json_body` (Content-Type: application/json) to `target`
  // ("/api/v1/namespaces/ml/events"), with the same TLS and credentials as Get. kUnavailable
  // for connection and TLS failures; any HTTP status (201, 409 AlreadyExists, 403) is a
  // successful return with the server's body.
  virtual Result<HttpResponse> Post(const std::string& target, const std::string& json_body) = 0;
};

struct TransportOptions {
  long connect_timeout_s = 10;
  long request_timeout_s = 60;  // lists; a stream's limit is the watch timeout plus this
  long stream_timeout_s = 360;
  // Sent with every request ("X-Gpuledger-Token: ..."): what a service behind the API server's
  // proxy reads, as the proxy passes every header on but Authorization.
  std::vector<std::string> extra_headers;
};

// libcurl: TLS verification on (CA from the config, else the system store; off only for a
// kubeconfig's insecure-skip-tls-verify), client certificates from memory, bearer token.
// Call http::InitClientOnce() (http/client.h) before starting threads.
std::unique_ptr<ApiTransport> MakeCurlTransport(const ApiServerConfig& config,
                                                const TransportOptions& options = {});

}  // namespace gpuledger::k8s
