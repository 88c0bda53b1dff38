#pragma once
// The binary's subcommands, one function each: it adds the command and its flags to `app` and
// returns what runs it once parsed. main (gpuledger.cc) adds them in the order `--help` lists
// them and runs the one given.

#include <atomic>
#include <functional>
#include <vector>

#include <CLI/CLI.hpp>

namespace gpuledger::cmd {

struct Command {
  CLI::App* app = nullptr;   // the subcommand, parsed() once given
  std::function<int()> run;  // its exit code: 0 ok, 1 failure, 2 bad input
};

// The demo and the simulator's tools (sim_commands.cc).
Command AddDemoCommand(CLI::App& app);
std::vector<Command> AddSimCommands(CLI::App& app);  // sim example, sim import-alibaba

// The daemons, with their log flags (daemon_commands.cc).
Command AddAgentCommand(CLI::App& app);
Command AddServerCommand(CLI::App& app);

// The commands that read or close a ledger (reading_commands.cc).
Command AddReportCommand(CLI::App& app);
Command AddReconcileCommand(CLI::App& app);
Command AddCloseCommand(CLI::App& app);
Command AddStatementsCommand(CLI::App& app);
Command AddExportCommand(CLI::App& app);
Command AddAuditCommand(CLI::App& app);
Command AddRightsizeCommand(CLI::App& app);
Command AddTokensCommand(CLI::App& app);
Command AddMetricsCommand(CLI::App& app);

// Set once SIGINT or SIGTERM arrives; the first call installs the handlers (and ignores
// SIGPIPE). What runs until stopped (the demo's server, the daemons) polls it and tears down in
// order.
const std::atomic<bool>& StopOnSignals();

}  // namespace gpuledger::cmd
