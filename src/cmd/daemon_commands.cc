#include "cmd/commands.h"

#include <iostream>
#include <memory>
#include <string>

#include "cmd/client_auth_flags.h"
#include "cmd/run_agent.h"
#include "cmd/run_server.h"
#include "common/clock.h"
#include "io/log_sink.h"

namespace gpuledger::cmd {
namespace {

// The daemons' logs (io/log_sink.h), a flag of each.
struct LogFlags {
  std::string format = "text";
  std::string level = "info";
};

// Runs `daemon` with whatever it writes to std::cerr turned into log records (the daemons' one
// logging path); 2 for a bad --log-format or --log-level.
int WithLogs(const LogFlags& logs, const char* component, const std::function<int()>& daemon) {
  auto format = ParseLogFormat(logs.format);
  auto level = ParseLogLevel(logs.level);
  if (!format || !level) {
    std::cerr << "error: " << (!format ? format.error() : level.error()).message << "\n";
    return 2;
  }
  static const SystemClock kClock;
  LogSink sink(std::cerr.rdbuf(), *format, *level, component, kClock);
  std::streambuf* original = std::cerr.rdbuf(&sink);
  const int rc = daemon();
  std::cerr.rdbuf(original);
  return rc;
}

}  // namespace

Command AddAgentCommand(CLI::App& app) {
  auto o = std::make_shared<AgentFlags>();
  auto logs = std::make_shared<LogFlags>();
  auto* c = app.add_subcommand("agent", "the node agent: per-container GPU counters on /metrics");
  c->add_option("--log-format", logs->format, "text | json (one object a line)")
      ->capture_default_str();
  c->add_option("--log-level", logs->level, "info | warning | error")->capture_default_str();
  c->add_option("--node-name", o->node_name, "this node's name")->required();
  c->add_option("--host-root", o->host_root, "where the host's / is mounted")
      ->capture_default_str();
  c->add_option("--nvml-library", o->nvml_library, "NVML library to dlopen")->capture_default_str();
  c->add_option("--pod-resources-socket", o->pod_resources_socket, "kubelet PodResources socket")
      ->capture_default_str();
  c->add_option("--cri-socket", o->cri_socket,
                "CRI runtime socket, e.g. /run/containerd/containerd.sock (default: none; "
                "containers from the kubelet's files, /var/log/pods and the pods' cgroups)");
  c->add_option("--listen", o->listen, "HOST:PORT for /metrics and /healthz")
      ->capture_default_str();
  c->add_option("--interval", o->interval, "collection interval")->capture_default_str();
  c->add_option("--nvml-timeout", o->nvml_timeout, "deadline of one NVML call")
      ->capture_default_str();
  c->add_option("--kernel-time-dir", o->kernel_time_dir,
                "where in-process kernel-time tracers publish (under --host-root; empty: off)")
      ->capture_default_str();
  c->add_option("--dcgm-exporter", o->dcgm_exporter,
                "dcgm-exporter's metrics URL, e.g. http://localhost:9400/metrics: SM/tensor/DRAM "
                "activity and MIG busy time from it (docs/dcgm.md)");
  c->add_option("--policy", o->policy, "guardrail policy YAML (docs/guardrails-policy.md)");
  return {c, [o, logs] {
            const std::atomic<bool>& stop = StopOnSignals();
            return WithLogs(*logs, "agent", [&] { return RunAgent(*o, stop); });
          }};
}

Command AddServerCommand(CLI::App& app) {
  auto o = std::make_shared<ServerFlags>();
  auto logs = std::make_shared<LogFlags>();
  auto* c = app.add_subcommand("server", "serve a ledger's REST API");
  c->add_option("--log-format", logs->format, "text | json (one object a line)")
      ->capture_default_str();
  c->add_option("--log-level", logs->level, "info | warning | error")->capture_default_str();
  c->add_option("--source", o->source,
                "ingest: scrape | files=DIR | prometheus=URL (docs/ingest.md)");
  c->add_option("--targets-from", o->targets_from,
                "scrape: the agents' Service, NAMESPACE/SERVICE[:PORT] (its Endpoints)");
  c->add_option("--kubeconfig", o->kubeconfig,
                "watch pods, namespaces and nodes through this kubeconfig");
  c->add_option("--kube-context", o->kube_context, "the kubeconfig context (default: current)");
  c->add_flag("--in-cluster", o->in_cluster, "watch through the pod's service account");
  c->add_option("--api-server", o->api_server,
                "API server URL (override; alone: unauthenticated, e.g. kubectl proxy)");
  c->add_option("--since", o->since, "prometheus=URL: how far back a first run reads")
      ->capture_default_str();
  c->add_flag("--backfill-only", o->backfill_only,
              "prometheus=URL or files=DIR: ingest what there is, then exit (no API served)");
  c->add_flag("--dcgm-from-prometheus", o->dcgm_from_prometheus,
              "prometheus=URL: fill rows without activity from dcgm-exporter's series there");
  AddClientAuthFlags(*c, o->prometheus_auth, "prometheus-", "prometheus=URL");
  c->add_option("--cluster", o->cluster,
                "cluster name for new rows (default: the ledger's, else \"default\")");
  c->add_flag("--read-only", o->read_only,
              "serve a ledger other servers write (no --source): nothing written or migrated");
  c->add_option("--targets", o->targets, "scrape: agents as HOST:PORT[,HOST:PORT...]");
  c->add_option("--scrape-interval", o->scrape_interval, "scrape: time between rounds")
      ->capture_default_str();
  c->add_option("--scrape-scheme", o->scrape_scheme,
                "scrape: http, or https for agents behind a TLS proxy")
      ->capture_default_str();
  AddClientAuthFlags(*c, o->scrape_auth, "scrape-", "scrape");
  c->add_flag("--serve", o->serve, "files=DIR: keep serving the API after the replay");
  c->add_option("--ledger", o->ledger, "sqlite:PATH or postgres://URL")->required();
  c->add_option("--listen", o->listen, "HOST:PORT")->capture_default_str();
  c->add_option("--opencost-listen", o->opencost_listen,
                "HOST:PORT serving OpenCost's read paths (kubectl cost) without the "
                "token (docs/opencost.md)");
  c->add_option("--snapshot-days", o->snapshot_days,
                "days of the ledger's rows kept in memory for the API (docs/performance.md)")
      ->check(CLI::Range(1, 400))
      ->capture_default_str();
  c->add_option("--token-file", o->token_file, "require this bearer token on /api");
  c->add_option("--catalog", o->catalog, "price catalog YAML");
  c->add_option("--policy", o->policy, "guardrail policy YAML (docs/guardrails-policy.md)");
  c->add_flag("--webhook", o->webhook,
              "also serve the validating admission webhook over TLS (docs/webhook.md)");
  c->add_option("--tls-cert", o->tls_cert,
                "--webhook: PEM certificate (chain), the server's first");
  c->add_option("--tls-key", o->tls_key, "--webhook: PEM private key of --tls-cert");
  c->add_option("--webhook-listen", o->webhook_listen, "--webhook: HOST:PORT")
      ->capture_default_str();
  return {c, [o, logs] {
            const std::atomic<bool>& stop = StopOnSignals();
            return WithLogs(*logs, "server",
                            [&] { return RunServer(*o, stop, std::cout, std::cerr); });
          }};
}

}  // namespace gpuledger::cmd
