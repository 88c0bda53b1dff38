#include "cmd/commands.h"

#include <unistd.h>

#include <iostream>
#include <memory>

#include "cli/demo_command.h"
#include "cli/sim_command.h"

namespace gpuledger::cmd {

Command AddDemoCommand(CLI::App& app) {
  auto o = std::make_shared<cli::DemoOptions>();
  auto* c = app.add_subcommand("demo", "simulate a cluster for a week and show its chargeback");
  c->add_option("--scenario", o->scenario, "scenario YAML (default: the built-in cluster)");
  c->add_option("--hours", o->hours, "simulated hours (default: the scenario's)");
  c->add_option("--step", o->step, "sampling step in seconds")->capture_default_str();
  c->add_option("--out", o->out_dir, "output directory")->capture_default_str();
  c->add_option("--truth", o->truth, "write the simulator's true per-container figures (CSV)");
  c->add_option("--catalog", o->catalog, "price catalog YAML (on top of the built-in prices)");
  c->add_option(
      "--expositions", o->expositions,
      "also write every node's agent collections to DIR (server --source files=DIR replays them)");
  c->add_flag("--no-serve", o->no_serve, "do not serve the ledger afterwards");
  c->add_flag("--force", o->force, "replace a ledger already in --out");
  c->add_option("--listen", o->listen, "where to serve the ledger")->capture_default_str();
  return {c, [o] {
            const std::atomic<bool>& stop = StopOnSignals();
            o->progress = ::isatty(2) != 0;
            return cli::RunDemo(*o, stop, std::cout, std::cerr);
          }};
}

std::vector<Command> AddSimCommands(CLI::App& app) {
  auto* sim = app.add_subcommand("sim", "the simulator");
  sim->require_subcommand(1);
  auto* example = sim->add_subcommand("example", "print the built-in demo scenario");
  auto import = std::make_shared<cli::ImportAlibabaOptions>();
  auto* c = sim->add_subcommand("import-alibaba", "turn the Alibaba GPU trace into a scenario");
  c->add_option("--pods", import->pods, "openb_pod_list_*.csv")->required();
  c->add_option("--nodes", import->nodes, "openb_node_list_gpu_node.csv")->required();
  c->add_option("--out", import->out, "scenario YAML to write")->required();
  return {{example, [] { return cli::RunSimExample(std::cout); }},
          {c, [import] { return cli::RunSimImportAlibaba(*import, std::cout, std::cerr); }}};
}

}  // namespace gpuledger::cmd
