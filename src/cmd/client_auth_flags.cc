#include "cmd/client_auth_flags.h"

namespace gpuledger::cmd {

void AddClientAuthFlags(CLI::App& command, http::ClientAuth& auth, const std::string& prefix,
                        const std::string& peer) {
  const std::string p = "--" + prefix;
  command.add_option(p + "token-file", auth.bearer_token_file,
                     peer + ": bearer token, re-read on every request");
  command.add_option(p + "user", auth.basic_user,
                     peer + ": basic-auth user (with " + p + "password-file)");
  command.add_option(p + "password-file", auth.basic_password_file, peer + ": basic-auth password");
  command.add_option(p + "ca-file", auth.ca_file, peer + ": CA bundle (PEM) for https://");
  command.add_option(p + "cert-file", auth.cert_file,
                     peer + ": client certificate (PEM) for https:// servers that ask for one");
  command.add_option(p + "key-file", auth.key_file,
                     peer + ": the key of " + p + "cert-file (default: in that file)");
  command.add_flag(p + "insecure-skip-tls-verify", auth.insecure_skip_verify,
                   peer + ": do not verify the server's certificate (tests only)");
}

void AddReadFromFlags(CLI::App& command, cli::ReadFrom& from) {
  command.add_option("--db", from.db, "ledger: an SQLite file, sqlite:PATH or postgres://URL");
  command.add_option("--server", from.server,
                     "a running server, http[s]://HOST[:PORT], instead of --db");
  AddClientAuthFlags(command, from.server_auth, "", "--server");
  cli::KubeRoute& route = from.kube;
  command.add_option("--kubeconfig", route.kubeconfig,
                     "without --db and --server: read through this kubeconfig's API server "
                     "(default: $KUBECONFIG, ~/.kube/config)");
  command.add_option("--kube-context", route.context, "the kubeconfig context (default: current)");
  command.add_option("--kube-namespace", route.namespace_name, "where gpuledger is installed")
      ->capture_default_str();
}

}  // namespace gpuledger::cmd
