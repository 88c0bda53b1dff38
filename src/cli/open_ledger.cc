#include "cli/open_ledger.h"

#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "cli/exit_code.h"
#include "io/file_util.h"
#include "io/terminal.h"

namespace gpuledger::cli {

Result<std::unique_ptr<store::LedgerStore>> OpenExistingLedger(std::string_view flag,
                                                               const std::string& spec,
                                                               bool read_only) {
  if (spec.empty()) return InvalidArgument(fmt::format("{}: no ledger given", flag));
  if (store::IsPostgresLedgerSpec(spec))
    return read_only ? store::OpenLedgerReadOnly(spec) : store::OpenLedger(spec);
  const std::string path = store::SqliteLedgerPath(spec);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return InvalidArgument(
        fmt::format("{} '{}': no such ledger file (run `gpuledger demo` to make one)", flag, spec));
  if (std::filesystem::is_regular_file(path, ec) && std::filesystem::file_size(path, ec) == 0 &&
      !ec)
    return InvalidArgument(fmt::format(
        "{} '{}': an empty file, not a gpuledger ledger (nothing was written to it)", flag, spec));
  store::SqliteLedgerOptions options;
  // A reading command opens read-write where it can, so an older ledger's schema is migrated;
  // on a read-only file system it reads what is there.
  options.read_only = read_only || OnReadOnlyFileSystem(path);
  return store::OpenSqliteLedger(path, options);
}

Status CheckReadFlags(const std::string& db, const std::string& server, const std::string& format) {
  if (format != "table" && format != "json")
    return InvalidArgument(fmt::format("--format '{}': expected table or json", format));
  if (!db.empty() && !server.empty()) return InvalidArgument("give --db or --server, not both");
  return Status::Ok();
}

int PrintDocument(const std::string& db, const std::string& server, const std::string& format,
                  const std::function<Result<std::string>()>& document,
                  const std::function<Result<std::string>(const std::string&, std::size_t)>& table,
                  std::ostream& out, std::ostream& err) {
  if (Status flags = CheckReadFlags(db, server, format); !flags.ok())
    return Fail(err, flags.error());
  auto doc = document();
  if (!doc) return Fail(err, doc.error());
  if (format == "json") {
    out << *doc;
    return 0;
  }
  auto rendered = table(*doc, TerminalColumns());
  if (!rendered) {
    err << "error: " << rendered.error().message << "\n";
    return 1;
  }
  out << *rendered;
  return 0;
}

}  // namespace gpuledger::cli
