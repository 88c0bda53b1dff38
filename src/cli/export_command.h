#pragma once
// `gpuledger export --db LEDGER --format focus|csv [--window W] [--period hour|day]
//  [--policy P] [--idle I] [--out FILE]`: FOCUS 1.2 or plain CSV rows (ledger::ExportFromStore).

#include <ostream>
#include <string>

#include "ledger/billing_reads.h"

namespace gpuledger::cli {

struct ExportCommandOptions {
  std::string db;
  std::string out;  // empty or "-": stdout
  ledger::ExportOptions export_options;
};

// Returns the exit code: 0 ok, 1 failure, 2 bad input.
int RunExport(const ExportCommandOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gpuledger::cli
