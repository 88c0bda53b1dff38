#include "cli/export_command.h"

#include "cli/open_ledger.h"
#include "cli/report_command.h"
#include "io/file_util.h"
#include "store/ledger_store.h"

namespace gpuledger::cli {

int RunExport(const ExportCommandOptions& o, std::ostream& out, std::ostream& err) {
  auto store = OpenExistingLedger("--db", o.db, /*read_only=*/true);
  if (!store) {
    err << "error: " << store.error().message << "\n";
    return ExitCodeFor(store.error());
  }
  auto doc = billing::ExportFromStore(**store, o.export_options);
  if (!doc) {
    err << "error: " << doc.error().message << "\n";
    return ExitCodeFor(doc.error());
  }
  if (o.out.empty() || o.out == "-") {
    out << *doc;
    return 0;
  }
  if (Status s = WriteFile(o.out, *doc); !s) {
    err << "error: --out: " << s.error().message << "\n";
    return 1;
  }
  return 0;
}

}  // namespace gpuledger::cli
