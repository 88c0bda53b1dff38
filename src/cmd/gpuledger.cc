// The gpuledger binary: one main, subcommands as in design section 1. Exit codes: 0 ok,
// 1 failure, 2 bad input (flags, files).

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cmd/cli_words.h"
#include "cmd/client_auth_flags.h"
#include "cmd/run_agent.h"
#include "cmd/run_server.h"
#include "common/clock.h"
#include "io/log_sink.h"

#include "cli/audit_command.h"
#include "cli/close_command.h"
#include "cli/demo_command.h"
#include "cli/export_command.h"
#include "cli/metrics_command.h"
#include "cli/reconcile_command.h"
#include "cli/report_command.h"
#include "cli/rightsize_command.h"
#include "cli/sim_command.h"

#ifndef GPULEDGER_VERSION
#define GPULEDGER_VERSION "dev"
#endif

namespace {

// Set by SIGINT/SIGTERM; the daemons poll it and tear down in order.
std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

}  // namespace

int main(int argc, char** argv) {
  using namespace gpuledger::cli;
  using gpuledger::cmd::AddClientAuthFlags;
  using gpuledger::cmd::AddKubeRouteFlags;
  // Installed as kubectl-gpuledger too (`make install`), kubectl runs it as `kubectl gpuledger`:
  // its messages say so.
  const bool as_kubectl_plugin =
      std::filesystem::path(argv[0]).filename().string() == "kubectl-gpuledger";
  CLI::App app{"gpuledger: who used which GPU, how much, and what it cost",
               as_kubectl_plugin ? "kubectl gpuledger" : "gpuledger"};
  app.require_subcommand(1);
  app.footer(
      "The words the answers use (ppd, GPM, mig-presence, process-samples, the per-device "
      "method, ...): docs/glossary.md");

  DemoOptions demo;
  auto* demo_cmd =
      app.add_subcommand("demo", "simulate a cluster for a week and show its chargeback");
  demo_cmd->add_option("--scenario", demo.scenario,
                       "scenario YAML (default: the built-in cluster)");
  demo_cmd->add_option("--hours", demo.hours, "simulated hours (default: the scenario's)");
  demo_cmd->add_option("--step", demo.step, "sampling step in seconds")->capture_default_str();
  demo_cmd->add_option("--out", demo.out_dir, "output directory")->capture_default_str();
  demo_cmd->add_option("--truth", demo.truth,
                       "write the simulator's true per-container figures (CSV)");
  demo_cmd->add_option("--catalog", demo.catalog,
                       "price catalog YAML (on top of the built-in prices)");
  demo_cmd->add_option(
      "--expositions", demo.expositions,
      "also write every node's agent collections to DIR (server --source files=DIR replays them)");
  demo_cmd->add_flag("--no-serve", demo.no_serve, "do not serve the ledger afterwards");
  demo_cmd->add_flag("--force", demo.force, "replace a ledger already in --out");
  demo_cmd->add_option("--listen", demo.listen, "where to serve the ledger")->capture_default_str();

  ReportOptions report;
  auto* report_cmd = app.add_subcommand("report", "chargeback report from a ledger");
  report_cmd->add_option("--db", report.db, "ledger: an SQLite file or postgres://URL");
  report_cmd->add_option("--server", report.server,
                         "read from a running server (http[s]://HOST[:PORT])");
  AddClientAuthFlags(*report_cmd, report.server_auth, "", "--server");
  AddKubeRouteFlags(*report_cmd, report.kube);
  report_cmd
      ->add_option("--window", report.window,
                   "all | 7d | today | yesterday | week | lastweek | month | lastmonth | YYYY-MM | "
                   "START,END")
      ->capture_default_str();
  report_cmd
      ->add_option("--by", report.by,
                   "namespace | label:KEY | controller | node | gpu_model | device | container | "
                   "pod | sharing_mode (comma-separated for several levels)")
      ->capture_default_str();
  report_cmd->add_option("--policy", report.policy, "allocation | compute | memory | hybrid:ALPHA")
      ->capture_default_str();
  report_cmd->add_option("--idle", report.idle, "keep | share | namespace:NS")
      ->capture_default_str();
  report_cmd->add_option("--format", report.format, "table | csv | json")->capture_default_str();
  report_cmd->add_flag("--wide", report.wide, "table: every column (memory GiB-h), keys whole");

  auto* sim_cmd = app.add_subcommand("sim", "the simulator");
  sim_cmd->require_subcommand(1);
  auto* example_cmd = sim_cmd->add_subcommand("example", "print the built-in demo scenario");
  ImportAlibabaOptions import;
  auto* import_cmd =
      sim_cmd->add_subcommand("import-alibaba", "turn the Alibaba GPU trace into a scenario");
  import_cmd->add_option("--pods", import.pods, "openb_pod_list_*.csv")->required();
  import_cmd->add_option("--nodes", import.nodes, "openb_node_list_gpu_node.csv")->required();
  import_cmd->add_option("--out", import.out, "scenario YAML to write")->required();

  // The daemons' logs (io/log_sink.h), a flag of each.
  std::string log_format = "text", log_level = "info";
  gpuledger::cmd::AgentFlags agent;
  auto* agent_cmd =
      app.add_subcommand("agent", "the node agent: per-container GPU counters on /metrics");
  agent_cmd->add_option("--log-format", log_format, "text | json (one object a line)")
      ->capture_default_str();
  agent_cmd->add_option("--log-level", log_level, "info | warning | error")->capture_default_str();
  agent_cmd->add_option("--node-name", agent.node_name, "this node's name")->required();
  agent_cmd->add_option("--host-root", agent.host_root, "where the host's / is mounted")
      ->capture_default_str();
  agent_cmd->add_option("--nvml-library", agent.nvml_library, "NVML library to dlopen")
      ->capture_default_str();
  agent_cmd
      ->add_option("--pod-resources-socket", agent.pod_resources_socket,
                   "kubelet PodResources socket")
      ->capture_default_str();
  agent_cmd->add_option("--cri-socket", agent.cri_socket, "CRI runtime socket")
      ->capture_default_str();
  agent_cmd->add_option("--listen", agent.listen, "HOST:PORT for /metrics and /healthz")
      ->capture_default_str();
  agent_cmd->add_option("--interval", agent.interval, "collection interval")->capture_default_str();
  agent_cmd->add_option("--nvml-timeout", agent.nvml_timeout, "deadline of one NVML call")
      ->capture_default_str();
  agent_cmd
      ->add_option("--kernel-time-dir", agent.kernel_time_dir,
                   "where in-process kernel-time tracers publish (under --host-root; empty: off)")
      ->capture_default_str();
  agent_cmd->add_option(
      "--dcgm-exporter", agent.dcgm_exporter,
      "dcgm-exporter's metrics URL, e.g. http://localhost:9400/metrics: SM/tensor/DRAM "
      "activity and MIG busy time from it (docs/dcgm.md)");
  agent_cmd->add_option("--policy", agent.policy,
                        "guardrail policy YAML (docs/guardrails-policy.md)");

  gpuledger::cmd::ServerFlags server;
  auto* server_cmd = app.add_subcommand("server", "serve a ledger's REST API");
  server_cmd->add_option("--log-format", log_format, "text | json (one object a line)")
      ->capture_default_str();
  server_cmd->add_option("--log-level", log_level, "info | warning | error")->capture_default_str();
  server_cmd->add_option("--source", server.source,
                         "ingest: scrape | files=DIR | prometheus=URL (docs/ingest.md)");
  server_cmd->add_option("--targets-from", server.targets_from,
                         "scrape: the agents' Service, NAMESPACE/SERVICE[:PORT] (its Endpoints)");
  server_cmd->add_option("--kubeconfig", server.kubeconfig,
                         "watch pods, namespaces and nodes through this kubeconfig");
  server_cmd->add_option("--kube-context", server.kube_context,
                         "the kubeconfig context (default: current)");
  server_cmd->add_flag("--in-cluster", server.in_cluster,
                       "watch through the pod's service account");
  server_cmd->add_option("--api-server", server.api_server,
                         "API server URL (override; alone: unauthenticated, e.g. kubectl proxy)");
  server_cmd->add_option("--since", server.since, "prometheus=URL: how far back a first run reads")
      ->capture_default_str();
  server_cmd->add_flag(
      "--backfill-only", server.backfill_only,
      "prometheus=URL or files=DIR: ingest what there is, then exit (no API served)");
  server_cmd->add_flag(
      "--dcgm-from-prometheus", server.dcgm_from_prometheus,
      "prometheus=URL: fill rows without activity from dcgm-exporter's series there");
  AddClientAuthFlags(*server_cmd, server.prometheus_auth, "prometheus-", "prometheus=URL");
  server_cmd->add_option("--cluster", server.cluster,
                         "cluster name for new rows (default: the ledger's, else \"default\")");
  server_cmd->add_option("--targets", server.targets, "scrape: agents as HOST:PORT[,HOST:PORT...]");
  server_cmd->add_option("--scrape-interval", server.scrape_interval, "scrape: time between rounds")
      ->capture_default_str();
  server_cmd
      ->add_option("--scrape-scheme", server.scrape_scheme,
                   "scrape: http, or https for agents behind a TLS proxy")
      ->capture_default_str();
  AddClientAuthFlags(*server_cmd, server.scrape_auth, "scrape-", "scrape");
  server_cmd->add_flag("--serve", server.serve, "files=DIR: keep serving the API after the replay");
  server_cmd->add_option("--ledger", server.ledger, "sqlite:PATH or postgres://URL")->required();
  server_cmd->add_option("--listen", server.listen, "HOST:PORT")->capture_default_str();
  server_cmd->add_option("--opencost-listen", server.opencost_listen,
                         "HOST:PORT serving OpenCost's read paths (kubectl cost) without the "
                         "token (docs/opencost.md)");
  server_cmd
      ->add_option("--snapshot-days", server.snapshot_days,
                   "days of the ledger's rows kept in memory for the API (docs/performance.md)")
      ->check(CLI::Range(1, 400))
      ->capture_default_str();
  server_cmd->add_option("--token-file", server.token_file, "require this bearer token on /api");
  server_cmd->add_option("--catalog", server.catalog, "price catalog YAML");
  server_cmd->add_option("--policy", server.policy,
                         "guardrail policy YAML (docs/guardrails-policy.md)");
  server_cmd->add_flag("--webhook", server.webhook,
                       "also serve the validating admission webhook over TLS (docs/webhook.md)");
  server_cmd->add_option("--tls-cert", server.tls_cert,
                         "--webhook: PEM certificate (chain), the server's first");
  server_cmd->add_option("--tls-key", server.tls_key, "--webhook: PEM private key of --tls-cert");
  server_cmd->add_option("--webhook-listen", server.webhook_listen, "--webhook: HOST:PORT")
      ->capture_default_str();

  ReconcileOptions reconcile;
  auto* reconcile_cmd = app.add_subcommand(
      "reconcile", "scale modelled device costs to a FOCUS CSV bill, per node and day");
  reconcile_cmd->add_option("--db", reconcile.db, "ledger: an SQLite file or postgres://URL")
      ->required();
  reconcile_cmd
      ->add_option("--bill", reconcile.bill,
                   "FOCUS CSV bill (BilledCost, ResourceId, ChargePeriodStart/End)")
      ->required();

  CloseOptions close;
  auto* close_cmd = app.add_subcommand(
      "close", "freeze a month's priced statement; closing again makes a new version");
  close_cmd->add_option("--db", close.db, "ledger: an SQLite file or postgres://URL")->required();
  close_cmd->add_option("--period", close.period, "the month, YYYY-MM (it must have ended)")
      ->required();
  close_cmd->add_option("--policy", close.policy, "allocation | compute | memory | hybrid:ALPHA")
      ->capture_default_str();
  close_cmd->add_option("--idle", close.idle, "keep | share | namespace:NS")->capture_default_str();
  StatementsOptions statements;
  auto* statements_cmd = app.add_subcommand("statements", "the closed statements, every version");
  statements_cmd->add_option("--db", statements.db, "ledger: an SQLite file or postgres://URL")
      ->required();
  statements_cmd->add_option("--period", statements.period, "one month, YYYY-MM");

  ExportCommandOptions export_opts;
  gpuledger::billing::ExportOptions& eo = export_opts.export_options;
  auto* export_cmd =
      app.add_subcommand("export", "FOCUS 1.2 or CSV rows per charge period and workload");
  export_cmd->add_option("--db", export_opts.db, "ledger: an SQLite file or postgres://URL")
      ->required();
  export_cmd->add_option("--format", eo.format, "focus | csv")->capture_default_str();
  export_cmd->add_option("--window", eo.window, "all | 7d | START,END (RFC 3339)")
      ->capture_default_str();
  export_cmd->add_option("--period", eo.period, "charge period: hour | day")->capture_default_str();
  export_cmd->add_option("--policy", eo.policy, "allocation | compute | memory | hybrid:ALPHA")
      ->capture_default_str();
  export_cmd->add_option("--idle", eo.idle, "keep | share | namespace:NS")->capture_default_str();
  export_cmd->add_option("--team-label", eo.team_label, "pod/namespace label put in Tags")
      ->capture_default_str();
  export_cmd->add_option("--out", export_opts.out, "file to write (default: stdout)");

  AuditOptions audit;
  auto* audit_cmd = app.add_subcommand("audit", "guardrail findings with their evidence and cost");
  audit_cmd->add_option("--db", audit.db, "ledger: sqlite:PATH, a path, or postgres://URL");
  audit_cmd->add_option("--server", audit.server,
                        "a running server, http[s]://HOST[:PORT], instead of --db");
  AddClientAuthFlags(*audit_cmd, audit.server_auth, "", "--server");
  AddKubeRouteFlags(*audit_cmd, audit.kube);
  audit_cmd->add_option("--kind", audit.kind,
                        "only this kind (unallocated-access, stale-grant, ...)");
  audit_cmd->add_option("--since", audit.since, "window: 7d | 24h | all | START,END")
      ->capture_default_str();
  audit_cmd->add_option("--namespace", audit.namespace_name, "only this namespace");
  audit_cmd->add_option(
      "--workload", audit.workload,
      "only this workload's findings (namespace/Kind/name, as rightsize names it)");
  audit_cmd->add_option("--severity", audit.severity,
                        "this severity and worse: info | warning | critical");
  audit_cmd->add_flag("--open", audit.open_only, "only findings still open");
  audit_cmd->add_option("--policy", audit.policy,
                        "guardrail policy YAML (--db; the server applies its own)");
  audit_cmd->add_option("--format", audit.format, "table | json")->capture_default_str();

  RightsizeOptions rightsize;
  auto* rightsize_cmd = app.add_subcommand(
      "rightsize", "what each workload could run on instead, with the monthly saving");
  rightsize_cmd->add_option("--db", rightsize.db, "ledger: sqlite:PATH, a path, or postgres://URL");
  rightsize_cmd->add_option("--server", rightsize.server,
                            "a running server, http[s]://HOST[:PORT], instead of --db");
  AddClientAuthFlags(*rightsize_cmd, rightsize.server_auth, "", "--server");
  AddKubeRouteFlags(*rightsize_cmd, rightsize.kube);
  rightsize_cmd->add_option("--catalog", rightsize.catalog,
                            "prices YAML for the models a workload could move to (--db)");
  rightsize_cmd->add_option("--window", rightsize.window, "window: 7d | 24h | all | START,END")
      ->capture_default_str();
  rightsize_cmd->add_option("--namespace", rightsize.namespace_name, "only this namespace");
  rightsize_cmd->add_option("--workload", rightsize.workload,
                            "only this workload, NAMESPACE/KIND/NAME (e.g. ml/Deployment/train)");
  rightsize_cmd
      ->add_option("--headroom", rightsize.headroom,
                   "memory room above the peak, 1.0-4.0 (1.2 = 20%)")
      ->capture_default_str();
  rightsize_cmd
      ->add_option("--percentile", rightsize.percentile,
                   "compute share to size by: p50 | p95 | p99")
      ->capture_default_str();
  rightsize_cmd->add_option("--format", rightsize.format, "table | json")->capture_default_str();

  MetricsOptions metrics;
  auto* metrics_cmd =
      app.add_subcommand("metrics", "every Prometheus family gpuledger exports (docs/metrics.md)");
  metrics_cmd->add_option("--format", metrics.format, "markdown | names | json")
      ->capture_default_str();

  app.add_subcommand("version", "print the version");
  app.set_version_flag("--version", "gpuledger " GPULEDGER_VERSION);

  const std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "help") {  // `gpuledger help [COMMAND]`, as git and kubectl
    const CLI::App* topic = &app;
    if (args.size() > 1) {
      const std::string unknown = gpuledger::cmd::UnknownWord(app, {args[1]});
      if (!unknown.empty()) {
        std::cerr << "error: " << unknown << "\n";
        return 2;
      }
      topic = app.get_subcommand(args[1]);
    }
    std::cout << topic->help();
    return 0;
  }
  if (const std::string unknown = gpuledger::cmd::UnknownWord(app, args); !unknown.empty()) {
    std::cerr << "error: " << unknown << "\nRun with --help for more information.\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  if (reconcile_cmd->parsed()) {
    reconcile.imported_at_us = gpuledger::SystemClock().Now().wall_us;
    return RunReconcile(reconcile, std::cout, std::cerr);
  }
  if (close_cmd->parsed()) {
    close.build = GPULEDGER_VERSION;
    close.now_us = gpuledger::SystemClock().Now().wall_us;
    return RunClose(close, std::cout, std::cerr);
  }
  if (statements_cmd->parsed()) return RunStatements(statements, std::cout, std::cerr);
  if (export_cmd->parsed()) return RunExport(export_opts, std::cout, std::cerr);
  if (audit_cmd->parsed()) return RunAudit(audit, std::cout, std::cerr);
  if (rightsize_cmd->parsed()) return RunRightsize(rightsize, std::cout, std::cerr);
  if (metrics_cmd->parsed()) return RunMetrics(metrics, std::cout, std::cerr);
  if (report_cmd->parsed()) return RunReport(report, std::cout, std::cerr);
  if (example_cmd->parsed()) return RunSimExample(std::cout);
  if (import_cmd->parsed()) return RunSimImportAlibaba(import, std::cout, std::cerr);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);
  if (demo_cmd->parsed()) {
    demo.progress = ::isatty(2) != 0;
    return RunDemo(demo, g_stop, std::cout, std::cerr);
  }
  if (server_cmd->parsed() || agent_cmd->parsed()) {
    // The daemons' one logging path: whatever they write to std::cerr, as log records.
    auto format = gpuledger::ParseLogFormat(log_format);
    auto level = gpuledger::ParseLogLevel(log_level);
    if (!format || !level) {
      std::cerr << "error: " << (!format ? format.error() : level.error()).message << "\n";
      return 2;
    }
    static const gpuledger::SystemClock kClock;
    gpuledger::LogSink sink(std::cerr.rdbuf(), *format, *level,
                            server_cmd->parsed() ? "server" : "agent", kClock);
    std::streambuf* original = std::cerr.rdbuf(&sink);
    const int rc = server_cmd->parsed()
                       ? gpuledger::cmd::RunServer(server, g_stop, std::cout, std::cerr)
                       : gpuledger::cmd::RunAgent(agent, g_stop);
    std::cerr.rdbuf(original);
    return rc;
  }
  std::cout << "gpuledger " << GPULEDGER_VERSION << "\n";
  return 0;
}
