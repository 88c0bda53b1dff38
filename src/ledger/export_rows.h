#pragma once
// FOCUS and plain-CSV export rows over a Snapshot: billing::BuildExportRows' rows (the same
// ExportBuilder, device-hour by device-hour) without reading the window's rows again.

#include <vector>

#include "billing/focus_export.h"
#include "common/result.h"
#include "ledger/snapshot.h"

namespace gpuledger::ledger {

// The snapshot must cover [request.from_us, request.to_us).
Result<std::vector<billing::ExportRow>> BuildExportRows(const Snapshot& snapshot,
                                                        const billing::ExportRequest& request);

}  // namespace gpuledger::ledger
