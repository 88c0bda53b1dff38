#pragma once
// `gpuledger reconcile --db LEDGER --bill FILE.csv`: import a FOCUS CSV bill and scale the
// modelled device costs of each billed node-day to the bill (ledger::ImportBill).

#include <ostream>
#include <string>

#include "common/units.h"

namespace gpuledger::cli {

struct ReconcileOptions {
  std::string db;
  std::string bill;
  Micros imported_at_us = 0;  // recorded with each node-day; main passes the wall clock
};

// Returns the exit code: 0 ok (warnings about unknown resources included), 1 failure, 2 bad
// input (a bad bill row: "file:line:column: ..."; nothing is written).
int RunReconcile(const ReconcileOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gpuledger::cli
