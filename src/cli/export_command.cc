#include "cli/export_command.h"

#include <fmt/format.h>

#include "cli/exit_code.h"
#include "cli/flag_error.h"
#include "cli/open_ledger.h"
#include "io/file_util.h"
#include "ledger/export_rows.h"
#include "ledger/read_service.h"
#include "store/ledger_store.h"

namespace gpuledger::cli {
namespace {

// Standard output: what was written stays written.
class OutputSink final : public ledger::ExportSink {
 public:
  explicit OutputSink(std::ostream& out) : out_(out) {}
  Status Restart() override {
    return Unavailable(
        "a day already written changed in the ledger meanwhile (a bill imported, late rows); "
        "export again, or to a file with --out");
  }
  Status Write(std::string_view text) override {
    out_ << text;
    return out_ ? Status::Ok() : IoError("standard output: write failed");
  }

 private:
  std::ostream& out_;
};

// --out FILE: in place once whole.
class FileSink final : public ledger::ExportSink {
 public:
  explicit FileSink(const std::string& path) : file_(path) {}
  Status Restart() override { return Named(file_.Restart()); }
  Status Write(std::string_view text) override { return Named(file_.Write(text)); }
  Status Commit() { return Named(file_.Commit()); }

 private:
  static Status Named(const Status& s) {
    return s.ok() ? s : Status(IoError("--out: " + s.error().message));
  }
  FileWriter file_;
};

// --out names a regular file or a new one, never the ledger or one of SQLite's files beside it
// (issue 58: `export --db L --out L` replaced the ledger with the CSV and exited 0).
Status CheckOut(const std::string& out, const std::string& db) {
  if (Status s = CheckOutputPath(out, "--out"); !s.ok()) return s;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    const std::string file = db + suffix;
    if (out == file || SameFile(out, file))
      return InvalidArgument(
          fmt::format("--out '{}' is the ledger's own file {}; name another", out, file));
  }
  return Status::Ok();
}

}  // namespace

int RunExport(const ExportCommandOptions& o, std::ostream& out, std::ostream& err) {
  if (!o.out.empty() && o.out != "-") {
    if (Status s = CheckOut(o.out, o.db); !s.ok()) return Fail(err, s.error());
  }
  auto store = OpenExistingLedger("--db", o.db, /*read_only=*/true);
  if (!store) return Fail(err, store.error());
  // Written a day at a time as the days are read: a month of a large cluster never held whole.
  ledger::ReadService reads;
  Status written = Status::Ok();
  if (o.out.empty() || o.out == "-") {
    OutputSink sink(out);
    written = ledger::ExportFromStore(**store, reads, o.export_options, sink);
  } else {
    FileSink sink(o.out);
    written = ledger::ExportFromStore(**store, reads, o.export_options, sink);
    if (written.ok()) written = sink.Commit();
  }
  if (!written.ok())
    return Fail(err,
                AsFlagError(written.error(), {"window", "period", "policy", "idle", "format"}));
  return 0;
}

}  // namespace gpuledger::cli
