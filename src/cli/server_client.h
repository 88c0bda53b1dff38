#pragma once
// GETs of a running `gpuledger server`'s API for the commands that read one (`report
// --server`, `audit --server`, `rightsize --server`): one place for the URL, the credentials and
// the error mapping, over the one HTTP client (http/client.h). Without --server they go through
// the API server of a kubeconfig's context (`kubectl gpuledger report`): its service proxy to
// the gpuledger-server Service, with the kubeconfig's credentials (k8s/api_transport.h).

#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "http/client.h"

namespace gpuledger::cli {

// Where gpuledger is installed, for reading through the API server (docs/install.md).
struct KubeRoute {
  std::string kubeconfig;  // "": $KUBECONFIG's first file, else ~/.kube/config
  std::string context;     // "": the kubeconfig's current context
  std::string namespace_name = "gpuledger";
};

// The --server flag of a reading command and its credentials (--token-file, --ca-file, ...).
// With `url` empty the request goes through `kube`; the API token is then --token-file's, or
// read from the Secret <namespace>/gpuledger-api-token where the user may read it, and sent as
// X-Gpuledger-Token (the API server's proxy passes on every header but Authorization).
struct ServerAccess {
  std::string url;  // http[s]://HOST[:PORT][/PREFIX]; "": through `kube`
  http::ClientAuth auth;
  KubeRoute kube;
};

// Where a reading command reads: a ledger file (--db), a running server (--server), or, with
// neither, the server behind the API server of a kubeconfig's context.
struct ReadFrom {
  std::string db;
  std::string server;  // http://host:port of a running `gpuledger server`, instead of --db
  http::ClientAuth server_auth;  // credentials and trust for --server
  KubeRoute kube;                // neither --db nor --server: through the API server
  ServerAccess Server() const { return {server, server_auth, kube}; }
};

// GET `server.url` + `path` with `params`. The body of a 200; kInvalidArgument for a bad URL,
// credential file or a 400 (the server's JSON error names the parameter), kUnavailable for the rest
// (what was tried and why it failed); messages start with "--server <url>", or say which API
// server and context were tried.
Result<std::string> GetFromServer(const ServerAccess& server, const std::string& path,
                                  const std::vector<std::pair<std::string, std::string>>& params);

}  // namespace gpuledger::cli
