#pragma once
// A report read from a ledger a day at a time, for a reader that keeps no snapshot between
// queries (the CLI), and the read service where it holds none.

#include <vector>

#include "common/result.h"
#include "ledger/reports.h"
#include "report/report.h"
#include "store/ledger_store.h"

namespace gpuledger::ledger {

// BuildReports for a reader that keeps no snapshot between queries (the CLI): the window is
// read and summed a day at a time, so it holds one day of the ledger, not the window. The
// same answer as BuildReports over the window's snapshot: when the ledger changed while the
// days were read, or the sums may not fit, the window is read again whole, in one snapshot
// (so is a report that charges idle to a namespace and groups by a label). With `open_more`,
// a connection of its own per core reads days in parallel (if one cannot be opened, fewer do).
// Days the ledger keeps summed (KeepDays) are read so; it writes nothing, ever.
// With `days_from_rows`, the number of whole days the ledger does not keep summed (no writer
// kept them, or one could not be read) that were summed from their rows instead, the slower way.
Result<std::vector<report::Report>> ReadReports(store::LedgerStore& store, const ReportQuery& query,
                                                const store::StoreOpener& open_more = {},
                                                int* days_from_rows = nullptr);

}  // namespace gpuledger::ledger
