#include "cmd/commands.h"

#include <iostream>
#include <memory>

#include "cli/audit_command.h"
#include "cli/close_command.h"
#include "cli/export_command.h"
#include "cli/metrics_command.h"
#include "cli/reconcile_command.h"
#include "cli/report_command.h"
#include "cli/rightsize_command.h"
#include "cli/tokens_command.h"
#include "cmd/client_auth_flags.h"
#include "common/clock.h"

#ifndef GPULEDGER_VERSION
#define GPULEDGER_VERSION "dev"
#endif

namespace gpuledger::cmd {
namespace {

// The window a chargeback reads and the rules it charges by: report's and tokens' flags.
void AddChargeFlags(CLI::App& c, std::string& window, std::string& policy, std::string& idle) {
  c.add_option("--window", window,
               "all | 7d | today | yesterday | week | lastweek | month | lastmonth | YYYY-MM | "
               "START,END")
      ->capture_default_str();
  c.add_option("--policy", policy, "allocation | compute | memory | hybrid:ALPHA")
      ->capture_default_str();
  c.add_option("--idle", idle, "keep | share | namespace:NS")->capture_default_str();
}

}  // namespace

Command AddReportCommand(CLI::App& app) {
  auto o = std::make_shared<cli::ReportOptions>();
  auto* c = app.add_subcommand("report", "chargeback report from a ledger");
  AddReadFromFlags(*c, *o);
  AddChargeFlags(*c, o->window, o->policy, o->idle);
  c->add_option("--by", o->group_by,
                "namespace | label:KEY | controller | cluster | node | gpu_model | device | "
                "container | pod | sharing_mode (comma-separated for several levels)")
      ->capture_default_str();
  c->add_option("--filter", o->filter,
                "only these consumers: the API's filter language, e.g. 'cluster:\"eu-train\"' or "
                "'namespace:\"ml\"+label[team]:\"vision\"' (docs/api.md)");
  c->add_option("--format", o->format, "table | csv | json")->capture_default_str();
  c->add_flag("--wide", o->wide, "table: every column (memory GiB-h), keys whole");
  return {c, [o] { return cli::RunReport(*o, std::cout, std::cerr); }};
}

Command AddReconcileCommand(CLI::App& app) {
  auto o = std::make_shared<cli::ReconcileOptions>();
  auto* c = app.add_subcommand("reconcile",
                               "scale modelled device costs to a FOCUS CSV bill, per node and day");
  c->add_option("--db", o->db, "ledger: an SQLite file or postgres://URL")->required();
  c->add_option("--bill", o->bill, "FOCUS CSV bill (BilledCost, ResourceId, ChargePeriodStart/End)")
      ->required();
  return {c, [o] {
            o->imported_at_us = SystemClock().Now().wall_us;
            return cli::RunReconcile(*o, std::cout, std::cerr);
          }};
}

Command AddCloseCommand(CLI::App& app) {
  auto o = std::make_shared<cli::CloseOptions>();
  auto* c = app.add_subcommand(
      "close", "freeze a month's priced statement; closing again makes a new version");
  c->add_option("--db", o->db, "ledger: an SQLite file or postgres://URL")->required();
  c->add_option("--period", o->period, "the month, YYYY-MM (it must have ended)")->required();
  c->add_option("--policy", o->policy, "allocation | compute | memory | hybrid:ALPHA")
      ->capture_default_str();
  c->add_option("--idle", o->idle, "keep | share | namespace:NS")->capture_default_str();
  return {c, [o] {
            o->build = GPULEDGER_VERSION;
            o->now_us = SystemClock().Now().wall_us;
            return cli::RunClose(*o, std::cout, std::cerr);
          }};
}

Command AddStatementsCommand(CLI::App& app) {
  auto o = std::make_shared<cli::StatementsOptions>();
  auto* c = app.add_subcommand("statements", "the closed statements, every version");
  c->add_option("--db", o->db, "ledger: an SQLite file or postgres://URL")->required();
  c->add_option("--period", o->period, "one month, YYYY-MM");
  return {c, [o] { return cli::RunStatements(*o, std::cout, std::cerr); }};
}

Command AddExportCommand(CLI::App& app) {
  auto o = std::make_shared<cli::ExportCommandOptions>();
  ledger::ExportOptions& eo = o->export_options;
  auto* c = app.add_subcommand("export", "FOCUS 1.2 or CSV rows per charge period and workload");
  c->add_option("--db", o->db, "ledger: an SQLite file or postgres://URL")->required();
  c->add_option("--format", eo.format, "focus | csv")->capture_default_str();
  c->add_option("--window", eo.window, "all | 7d | START,END (RFC 3339)")->capture_default_str();
  c->add_option("--period", eo.period, "charge period: hour | day")->capture_default_str();
  c->add_option("--policy", eo.policy, "allocation | compute | memory | hybrid:ALPHA")
      ->capture_default_str();
  c->add_option("--idle", eo.idle, "keep | share | namespace:NS")->capture_default_str();
  c->add_option("--team-label", eo.team_label, "pod/namespace label put in Tags")
      ->capture_default_str();
  c->add_option("--out", o->out, "file to write (default: stdout)");
  return {c, [o] { return cli::RunExport(*o, std::cout, std::cerr); }};
}

Command AddAuditCommand(CLI::App& app) {
  auto o = std::make_shared<cli::AuditOptions>();
  auto* c = app.add_subcommand("audit", "guardrail findings with their evidence and cost");
  AddReadFromFlags(*c, *o);
  c->add_option("--kind", o->kind, "only this kind (unallocated-access, stale-grant, ...)");
  c->add_option("--since", o->since, "window: 7d | 24h | all | START,END")->capture_default_str();
  c->add_option("--namespace", o->namespace_name, "only this namespace");
  c->add_option("--workload", o->workload,
                "only this workload's findings (namespace/Kind/name, as rightsize names it)");
  c->add_option("--severity", o->severity, "this severity and worse: info | warning | critical");
  c->add_flag("--open", o->open_only, "only findings still open");
  c->add_option("--policy", o->policy, "guardrail policy YAML (--db; the server applies its own)");
  c->add_option("--format", o->format, "table | json")->capture_default_str();
  return {c, [o] { return cli::RunAudit(*o, std::cout, std::cerr); }};
}

Command AddRightsizeCommand(CLI::App& app) {
  auto o = std::make_shared<cli::RightsizeOptions>();
  auto* c = app.add_subcommand("rightsize",
                               "what each workload could run on instead, with the monthly saving");
  AddReadFromFlags(*c, *o);
  c->add_option("--catalog", o->catalog,
                "prices YAML for the models a workload could move to (--db)");
  c->add_option("--window", o->window, "window: 7d | 24h | all | START,END")->capture_default_str();
  c->add_option("--namespace", o->namespace_name, "only this namespace");
  c->add_option("--workload", o->workload,
                "only this workload, NAMESPACE/KIND/NAME (e.g. ml/Deployment/train)");
  c->add_option("--headroom", o->headroom, "memory room above the peak, 1.0-4.0 (1.2 = 20%)")
      ->capture_default_str();
  c->add_option("--percentile", o->percentile, "compute share to size by: p50 | p95 | p99")
      ->capture_default_str();
  c->add_option("--format", o->format, "table | json")->capture_default_str();
  return {c, [o] { return cli::RunRightsize(*o, std::cout, std::cerr); }};
}

Command AddTokensCommand(CLI::App& app) {
  auto o = std::make_shared<cli::TokensOptions>();
  auto* c = app.add_subcommand(
      "tokens", "what a million tokens cost per model or team, from the GPU time truly used");
  AddReadFromFlags(*c, *o);
  AddChargeFlags(*c, o->window, o->policy, o->idle);
  c->add_option("--by", o->group_by,
                "model | namespace | label:KEY | controller | pod | container (comma-separated "
                "for several levels)")
      ->capture_default_str();
  c->add_option("--format", o->format, "table | json")->capture_default_str();
  return {c, [o] { return cli::RunTokens(*o, std::cout, std::cerr); }};
}

Command AddMetricsCommand(CLI::App& app) {
  auto o = std::make_shared<cli::MetricsOptions>();
  auto* c =
      app.add_subcommand("metrics", "every Prometheus family gpuledger exports (docs/metrics.md)");
  c->add_option("--format", o->format, "markdown | names | json")->capture_default_str();
  return {c, [o] { return cli::RunMetrics(*o, std::cout, std::cerr); }};
}

}  // namespace gpuledger::cmd
