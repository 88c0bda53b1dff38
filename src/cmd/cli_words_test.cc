#include "cmd/cli_words.h"

#include <gtest/gtest.h>

namespace gpuledger::cmd {
namespace {

TEST(Nearest, ASlipIsNamedAndAStrangerIsNot) {
  const std::vector<std::string> commands = {"demo", "report", "server", "agent", "export"};
  EXPECT_EQ(Nearest("reprot", commands), "report");
  EXPECT_EQ(Nearest("sever", commands), "server");
  EXPECT_EQ(Nearest("deploy", commands), "");
  EXPECT_EQ(Nearest("--ledgr", {"--ledger", "--listen"}), "--ledger");
}

TEST(UnknownWord, NamesTheCommandOrOptionThatDoesNotExist) {
  CLI::App app;
  std::string ledger, window;
  auto* server = app.add_subcommand("server");
  server->add_option("--ledger", ledger)->required();
  auto* report = app.add_subcommand("report");
  report->add_option("--window", window);
  auto* sim = app.add_subcommand("sim");
  sim->add_subcommand("example");
  EXPECT_EQ(UnknownWord(app, {"reprot"}),
            "unknown command 'reprot'; did you mean 'report'? (commands: server, report, sim)");
  EXPECT_EQ(UnknownWord(app, {"sim", "bogus"}),
            "unknown command 'bogus' of 'sim' (commands: example)");
  EXPECT_EQ(UnknownWord(app, {"server", "--ledgr", "x"}),
            "unknown option --ledgr for 'server'; did you mean --ledger?");
  // Two letters swapped are one slip (issue 60: 'audti' got no suggestion).
  EXPECT_EQ(UnknownWord(app, {"srever"}),
            "unknown command 'srever'; did you mean 'server'? (commands: server, report, sim)");
  EXPECT_EQ(UnknownWord(app, {"report", "--widnow", "7d"}),
            "unknown option --widnow for 'report'; did you mean --window?");
  EXPECT_EQ(UnknownWord(app, {"report", "--window=7d", "--help"}), "");
  EXPECT_EQ(UnknownWord(app, {"report", "--", "--anything"}), "");
  EXPECT_EQ(UnknownWord(app, {"server", "--ledger", "x"}), "");
}

}  // namespace
}  // namespace gpuledger::cmd
