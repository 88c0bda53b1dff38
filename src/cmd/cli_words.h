#pragma once
// What CLI11 would only call "A subcommand is required" or "--ledger is required": a command or
// option that does not exist, named with the nearest valid one ("unknown command 'reprot'; did
// you mean 'report'?"). Checked before parsing, so a misspelt flag is reported as itself rather
// than as the required flag it was meant to be.

#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

namespace gpuledger::cmd {

// The candidate closest to `word` by edit distance, when it is close enough to be a slip (at
// most a third of the word's length, and at least 1 edit allowed); "" otherwise.
std::string Nearest(std::string_view word, const std::vector<std::string>& candidates);

// The first unknown command or option in `args` (argv without the program name), as a message;
// "" when every command and option is known. Option values are not checked here.
std::string UnknownWord(const CLI::App& app, const std::vector<std::string>& args);

}  // namespace gpuledger::cmd
