#pragma once
// Kubeconfig exec credential plugins (client.authentication.k8s.io v1 and v1beta1): the way EKS
// (`aws eks get-token`), GKE (`gke-gcloud-auth-plugin`), AKS (`kubelogin`) and OIDC helpers hand
// out API server credentials. The kubeconfig names a command; it is run with the
// KUBERNETES_EXEC_INFO environment variable and prints an ExecCredential whose status holds a
// bearer token or a client certificate, optionally with an expiry. As kubectl does, the
// credential is kept until it expires or the API server answers 401, then the plugin runs again.
//
// gpuledger never has a terminal to lend a plugin: one that demands one (interactiveMode
// Always) is refused when the kubeconfig is read.

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "common/units.h"

namespace gpuledger::k8s {

struct ExecPlugin {
  std::string api_version;        // client.authentication.k8s.io/v1 or /v1beta1
  std::vector<std::string> argv;  // the command (resolved against the kubeconfig's folder when
                                  // it is a relative path) and its args
  std::vector<std::pair<std::string, std::string>> env;
  std::string install_hint;           // said when the command cannot be run
  bool provide_cluster_info = false;  // pass the cluster (server, CA) in KUBERNETES_EXEC_INFO
  std::string source;                 // "kubeconfig PATH: users[NAME].user.exec", for messages
};

struct ExecCredential {
  std::string token;
  std::string client_cert_pem;  // both set or neither
  std::string client_key_pem;
  std::optional<Micros> expires_unix_us;
};

// The cluster as the plugin may be told about it (provideClusterInfo).
struct ExecClusterInfo {
  std::string server;
  std::string ca_pem;
  bool insecure_skip_tls_verify = false;
};

// KUBERNETES_EXEC_INFO's value: an ExecCredential with the spec a plugin reads.
std::string ExecInfoJson(const ExecPlugin& plugin, const ExecClusterInfo& cluster);

// The plugin's stdout. kInvalidArgument naming the plugin and what is wrong (not JSON, another
// apiVersion or kind, no token and no certificate, a bad expirationTimestamp).
Result<ExecCredential> ParseExecCredential(std::string_view json, const ExecPlugin& plugin);

// Runs the plugin once. kUnavailable naming the command, its exit status and the end of its
// stderr; kNotFound with the install hint when it cannot be run.
Result<ExecCredential> RunExecPlugin(const ExecPlugin& plugin, const ExecClusterInfo& cluster,
                                     std::chrono::milliseconds timeout);

// One plugin's credential, shared by every connection of a process. Thread-safe.
class ExecCredentialCache {
 public:
  // `clock` is what the expiry is read against (null: the system clock); it must outlive this.
  ExecCredentialCache(ExecPlugin plugin, ExecClusterInfo cluster, const Clock* clock = nullptr,
                      std::chrono::milliseconds timeout = std::chrono::seconds(60));

  // The kept credential while it has more than 10 s left, else a fresh one from the plugin.
  Result<ExecCredential> Get();
  // The API server refused the credential: the next Get() runs the plugin again.
  void Invalidate();
  int runs() const;  // how many times the plugin ran

  const ExecPlugin& plugin() const { return plugin_; }

 private:
  const ExecPlugin plugin_;
  const ExecClusterInfo cluster_;
  const std::chrono::milliseconds timeout_;
  const Clock& clock_;
  mutable std::mutex mu_;  // held while the plugin runs: one run at a time
  std::optional<ExecCredential> kept_;
  int runs_ = 0;
};

}  // namespace gpuledger::k8s
