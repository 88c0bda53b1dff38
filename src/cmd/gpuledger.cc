// The gpuledger binary: one main, subcommands as in design section 1. Exit codes: 0 ok,
// 1 failure, 2 bad input (flags, files).

#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/demo_command.h"
#include "cli/report_command.h"
#include "cli/sim_command.h"

#ifndef GPULEDGER_VERSION
#define GPULEDGER_VERSION "dev"
#endif

int main(int argc, char** argv) {
  using namespace gpuledger::cli;
  CLI::App app{"gpuledger: who used which GPU, how much, and what it cost"};
  app.require_subcommand(1);

  DemoOptions demo;
  auto* demo_cmd = app.add_subcommand("demo", "simulate a cluster for a week and show its chargeback");
  demo_cmd->add_option("--scenario", demo.scenario, "scenario YAML (default: the built-in cluster)");
  demo_cmd->add_option("--hours", demo.hours, "simulated hours (default: the scenario's)");
  demo_cmd->add_option("--step", demo.step, "sampling step in seconds")->capture_default_str();
  demo_cmd->add_option("--out", demo.out_dir, "output directory")->capture_default_str();
  demo_cmd->add_option("--truth", demo.truth, "write the simulator's true per-container figures (CSV)");
  demo_cmd->add_option("--catalog", demo.catalog, "price catalog YAML (on top of the built-in prices)");
  demo_cmd->add_flag("--no-serve", demo.no_serve, "do not start the server afterwards");

  ReportOptions report;
  auto* report_cmd = app.add_subcommand("report", "chargeback report from a ledger");
  report_cmd->add_option("--db", report.db, "ledger file (SQLite)")->required();
  report_cmd->add_option("--window", report.window, "all | 7d | START,END (RFC 3339)")->capture_default_str();
  report_cmd->add_option("--by", report.by,
                         "namespace | label:KEY | controller | node | gpu_model | device | container | pod | sharing_mode (comma-separated for several levels)")
      ->capture_default_str();
  report_cmd->add_option("--policy", report.policy, "allocation | compute | memory | hybrid:ALPHA")->capture_default_str();
  report_cmd->add_option("--idle", report.idle, "keep | share | namespace:NS")->capture_default_str();
  report_cmd->add_option("--format", report.format, "table | csv | json")->capture_default_str();

  auto* sim_cmd = app.add_subcommand("sim", "the simulator");
  sim_cmd->require_subcommand(1);
  auto* example_cmd = sim_cmd->add_subcommand("example", "print the built-in demo scenario");
  ImportAlibabaOptions import;
  auto* import_cmd = sim_cmd->add_subcommand("import-alibaba", "turn the Alibaba GPU trace into a scenario");
  import_cmd->add_option("--pods", import.pods, "openb_pod_list_*.csv")->required();
  import_cmd->add_option("--nodes", import.nodes, "openb_node_list_gpu_node.csv")->required();
  import_cmd->add_option("--out", import.out, "scenario YAML to write")->required();

  app.add_subcommand("version", "print the version");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  if (demo_cmd->parsed()) return RunDemo(demo, std::cout, std::cerr);
  if (report_cmd->parsed()) return RunReport(report, std::cout, std::cerr);
  if (example_cmd->parsed()) return RunSimExample(std::cout);
  if (import_cmd->parsed()) return RunSimImportAlibaba(import, std::cout, std::cerr);
  std::cout << "gpuledger " << GPULEDGER_VERSION << "\n";
  return 0;
}
