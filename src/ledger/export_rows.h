#pragma once
// FOCUS and plain-CSV exports over the read service: billing::BuildExportRows' rows (the same
// ExportBuilder, device-hour by device-hour) from snapshots, a window written a day at a time.

#include <string_view>
#include <vector>

#include "billing/focus_export.h"
#include "common/result.h"
#include "ledger/read_service.h"
#include "ledger/snapshot.h"
#include "store/ledger_store.h"

namespace gpuledger::ledger {

// The rows of the snapshot's hours in [request.from_us, request.to_us), which it must cover.
// `platform_labels`: the labels of the platform namespace for idle handling namespace:
// (nullptr: none).
Result<std::vector<billing::ExportRow>> BuildExportRows(const Snapshot& snapshot,
                                                        const billing::ExportRequest& request,
                                                        const LabelMap* platform_labels);
// As above with the platform namespace's labels of its last row in the request's window that
// has some (as billing::BuildExportRows takes them from the window's rows, the last winning).
Result<std::vector<billing::ExportRow>> BuildExportRows(const Snapshot& snapshot,
                                                        const billing::ExportRequest& request);

enum class ExportFormat { kFocus, kPlain };

// Where an export's text goes, a day's rows at a time.
class ExportSink {
 public:
  virtual ~ExportSink() = default;
  // A day already written changed in the ledger meanwhile: the export is written again from
  // its start, and what was written must go; a sink that cannot take it back fails.
  virtual Status Restart() = 0;
  virtual Status Write(std::string_view text) = 0;
};

// The export of request's window, written a day at a time through `reads`
// (ReadService::EachDay): the header, then each day's rows as they are built. The text is
// byte for byte the rendering of BuildExportRows over the window whole (a period never spans
// days, and rows are ordered by period first), while what is held is a day's snapshot and its
// rows. Errors of the rows (a sum past 64 bits) and the sink's stop it.
Status WriteExport(store::LedgerStore& store, ReadService& reads,
                   const billing::ExportRequest& request, ExportFormat format, ExportSink& sink);

}  // namespace gpuledger::ledger
