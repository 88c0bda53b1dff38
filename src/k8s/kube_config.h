#pragma once
// How to reach the API server: from a kubeconfig file (its current context) or from inside a
// pod (service-account token and CA). Pure parsing over file contents plus thin loaders; the
// curl transport turns an ApiServerConfig into TLS settings.

#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"

namespace gpuledger::k8s {

class ExecCredentialCache;  // exec_credential.h

struct ApiServerConfig {
  std::string server;  // "https://10.0.0.1:6443"; "http://..." allowed (tests, proxies)
  std::string ca_pem;  // PEM bundle to verify the server; empty: system trust store
  bool insecure_skip_tls_verify = false;  // only when the kubeconfig says so
  std::string client_cert_pem;            // client certificate auth (both set or neither)
  std::string client_key_pem;
  std::string bearer_token;  // static token
  // A token file re-read before each request (service-account tokens are rotated by the
  // kubelet, about hourly); wins over bearer_token.
  std::string bearer_token_file;
  // An exec credential plugin (exec_credential.h): its token or certificate, fetched when a
  // request needs it and shared by every connection made from copies of this config.
  std::shared_ptr<ExecCredentialCache> exec_credentials;
  std::string source;  // where this came from, for messages: the kubeconfig path
};

// Parses kubeconfig YAML. `path` names the file in errors and anchors relative file references
// (certificate-authority, client-certificate, client-key, tokenFile). `context` empty: the
// current-context. Errors name the file and the field ("kubeconfig /x: users[alice].user.
// client-key-data: not valid base64"). exec credential plugins (v1, v1beta1) are run when a
// request needs a credential, not here; auth-provider plugins are unsupported and say so.
Result<ApiServerConfig> ParseKubeconfig(std::string_view yaml, const std::string& path,
                                        const std::string& context = "");
Result<ApiServerConfig> LoadKubeconfig(const std::string& path, const std::string& context = "");

// In-cluster: server from KUBERNETES_SERVICE_HOST/PORT (passed in by the caller), token and CA
// under `root` + /var/run/secrets/kubernetes.io/serviceaccount/ (root "" in production, a temp
// dir in tests). The token file is re-read per request.
inline constexpr std::string_view kServiceAccountDir =
    "/var/run/secrets/kubernetes.io/serviceaccount";
Result<ApiServerConfig> LoadInClusterConfig(const std::string& root, std::string_view host,
                                            std::string_view port);

// Standard base64 (padding optional, whitespace ignored), as kubeconfig *-data fields hold.
Result<std::string> DecodeBase64(std::string_view text);
std::string EncodeBase64(std::string_view bytes);  // padded

}  // namespace gpuledger::k8s
