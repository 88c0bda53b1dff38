#pragma once
// `gpuledger close --db LEDGER --period 2026-11 [--policy P] [--idle I]`: freeze a month's
// priced statement (ledger/statements.h) as its next version; `gpuledger statements --db
// LEDGER [--period P]`: the statements closed, every version.

#include <ostream>
#include <string>

#include "common/units.h"

namespace gpuledger::cli {

struct CloseOptions {
  std::string db;
  std::string period;
  std::string policy = "allocation";
  std::string idle = "keep";
  std::string build;  // main passes the gpuledger version
  Micros now_us = 0;  // main passes the wall clock
};

// Returns the exit code: 0 closed, 1 failure, 2 bad input (a period that is not an ended month).
int RunClose(const CloseOptions& options, std::ostream& out, std::ostream& err);

struct StatementsOptions {
  std::string db;
  std::string period;  // "" every period
};

int RunStatements(const StatementsOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gpuledger::cli
