// The gpuledger binary: one main, subcommands as in design section 1. Exit codes: 0 ok,
// 1 failure, 2 bad input (flags, files).

#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cmd/cli_words.h"
#include "cmd/commands.h"

#ifndef GPULEDGER_VERSION
#define GPULEDGER_VERSION "dev"
#endif

int main(int argc, char** argv) {
  using namespace gpuledger::cmd;
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

  std::vector<Command> commands = {AddDemoCommand(app), AddReportCommand(app)};
  for (Command& c : AddSimCommands(app)) commands.push_back(std::move(c));
  for (auto add : {AddAgentCommand, AddServerCommand, AddReconcileCommand, AddCloseCommand,
                   AddStatementsCommand, AddExportCommand, AddAuditCommand, AddRightsizeCommand,
                   AddTokensCommand,
                   AddMetricsCommand})
    commands.push_back(add(app));
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
  for (const Command& c : commands)
    if (c.app->parsed()) return c.run();
  std::cout << "gpuledger " << GPULEDGER_VERSION << "\n";
  return 0;
}
