// The SQLite ledger: one file in WAL mode, schema versioned in `meta` and migrated on open; the
// ledger itself (store/sql_ledger.cc) over a SqliteConnection.
//
// The tables are STRICT, so a REAL can never slip into an integer column.

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <variant>

#include "io/file_util.h"
#include "store/ledger_store.h"
#include "store/sql_ledger.h"
#include "store/sqlite_connection.h"
#include "store/sqlite_db.h"
#include "store/sqlite_schema.h"

namespace gpuledger::store {
namespace {

class SqliteRow final : public SqlRow {
 public:
  explicit SqliteRow(const SqliteStmt& stmt) : stmt_(stmt) {}
  std::int64_t Int(int col) override { return stmt_.Int(col); }
  std::string Text(int col) const override { return stmt_.Text(col); }
  std::string_view Bytes(int col) override { return stmt_.Blob(col); }
  bool IsNull(int col) const override { return stmt_.IsNull(col); }
  // STRICT tables hold only integers in integer columns.
  Status Check(std::string_view /*table*/) const override { return Status::Ok(); }

 private:
  const SqliteStmt& stmt_;
};

class SqliteSqlTxn final : public SqlTxn {
 public:
  explicit SqliteSqlTxn(SqliteTxn txn) : txn_(std::move(txn)) {}
  Status Commit() override { return txn_.Commit(); }

 private:
  SqliteTxn txn_;
};

// " WHERE a = ?1 AND b = ?2" over `key`.
std::string KeyCondition(std::span<const SqlColumn> key) {
  std::string sql = " WHERE ";
  for (std::size_t i = 0; i < key.size(); ++i) {
    sql += fmt::format("{}{} = ?{}", i == 0 ? "" : " AND ", key[i].name, i + 1);
  }
  return sql;
}

void Bind(SqliteStmt& stmt, std::span<const SqlValue> args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const int index = static_cast<int>(i) + 1;
    if (const auto* n = std::get_if<std::int64_t>(&args[i])) {
      stmt.Bind(index, *n);
    } else if (const auto* text = std::get_if<std::string_view>(&args[i])) {
      stmt.Bind(index, *text);
    } else if (const auto* bytes = std::get_if<SqlBytes>(&args[i])) {
      stmt.BindBlob(index, bytes->bytes);
    } else {
      stmt.BindNull(index);
    }
  }
}

}  // namespace

Status SqliteConnection::CheckWritable() const {
  if (!db_.ReadOnly()) return Status::Ok();
  return IoError(
      fmt::format("{}: cannot write: the ledger is read-only (opened read-only, or the file or its "
                  "directory is not writable)",
                  name_));
}

Result<std::unique_ptr<SqlTxn>> SqliteConnection::Begin(bool write) {
  auto txn = SqliteTxn::Begin(db_, /*immediate=*/write);
  if (!txn) return txn.error();
  return std::unique_ptr<SqlTxn>(std::make_unique<SqliteSqlTxn>(std::move(*txn)));
}

Result<SqliteStmt*> SqliteConnection::Statement(std::string_view what, const std::string& sql) {
  if (auto it = statements_.find(sql); it != statements_.end()) return &it->second;
  // Full: start over, but never while a statement is being stepped (a row's callback may run
  // statements of its own: the scan's dictionary reads inside its hours).
  if (statements_.size() >= kMaxStatements && stepping_ == 0) statements_.clear();
  auto stmt = db_.Prepare(sql, what);
  if (!stmt) return stmt.error();
  return &statements_.emplace(sql, std::move(*stmt)).first->second;
}

Status SqliteConnection::Run(std::string_view what, const std::string& sql,
                             std::span<const SqlValue> args) {
  auto stmt = Statement(what, sql);
  if (!stmt) return stmt.status();
  Bind(**stmt, args);
  return (*stmt)->Run();
}

Result<std::optional<std::int64_t>> SqliteConnection::FirstInt(std::string_view what,
                                                               const std::string& sql,
                                                               std::span<const SqlValue> args) {
  std::optional<std::int64_t> first;
  Status read = ForEachRow(what, sql, args, [&](SqlRow& row) {
    if (!first) first = row.Int(0);
    return Status::Ok();
  });
  if (!read) return read.error();
  return first;
}

Status SqliteConnection::ForEachRow(std::string_view what, const std::string& sql,
                                    std::span<const SqlValue> args,
                                    const std::function<Status(SqlRow&)>& on_row) {
  auto stmt = Statement(what, sql);
  if (!stmt) return stmt.status();
  Bind(**stmt, args);
  SqliteRow row(**stmt);
  const Stepping stepping(stepping_);
  return (*stmt)->ForEachRow([&] { return on_row(row); });
}

Status SqliteConnection::ForEachRowWithKey(std::string_view what, const std::string& select,
                                           std::span<const SqlColumn> key,
                                           std::span<const SqlValue> cells,
                                           const std::function<Status(SqlRow&)>& on_row) {
  auto stmt = Statement(what, select + KeyCondition(key));
  if (!stmt) return stmt.status();
  SqliteRow row(**stmt);
  const Stepping stepping(stepping_);
  for (std::size_t at = 0; at < cells.size(); at += key.size()) {
    Bind(**stmt, cells.subspan(at, key.size()));
    if (Status s = (*stmt)->ForEachRow([&] { return on_row(row); }); !s) return s;
  }
  return Status::Ok();
}

Status SqliteConnection::RunPerRow(std::string_view what, const std::string& sql,
                                   std::size_t columns, std::span<const SqlValue> cells) {
  auto stmt = Statement(what, sql);
  if (!stmt) return stmt.status();
  for (std::size_t at = 0; at < cells.size(); at += columns) {
    Bind(**stmt, cells.subspan(at, columns));
    if (Status s = (*stmt)->Run(); !s) return s;
  }
  return Status::Ok();
}

Status SqliteConnection::Upsert(std::string_view what, const SqlUpsert& upsert,
                                std::span<const SqlValue> cells) {
  std::string sql = InsertIntoSql(upsert) + "VALUES (";
  for (std::size_t i = 1; i <= upsert.columns.size(); ++i) {
    sql += fmt::format("{}?{}", i == 1 ? "" : ", ", i);
  }
  sql += ")" + OnConflictSql(upsert);
  return RunPerRow(what, sql, upsert.columns.size(), cells);
}

Status SqliteConnection::Delete(std::string_view what, std::string_view table,
                                std::span<const SqlColumn> key, std::span<const SqlValue> cells) {
  return RunPerRow(what, fmt::format("DELETE FROM {}{}", table, KeyCondition(key)), key.size(),
                   cells);
}

Result<std::unique_ptr<LedgerStore>> OpenSqliteLedger(const std::string& path) {
  return OpenSqliteLedger(path, SqliteLedgerOptions{});
}

Result<std::unique_ptr<LedgerStore>> OpenSqliteLedger(const std::string& path,
                                                      const SqliteLedgerOptions& options) {
  int flags =
      options.read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  // A WAL-mode ledger is read through a -shm file beside it, which a read-only file system
  // cannot hold (issue 29: a ledger on a read-only mount could not even be read). Its content
  // is all in the main file once the log is folded in (no -wal file, or an empty one): then it
  // is read as immutable. Otherwise the last writes are only in the log, and are not dropped
  // silently.
  bool immutable = false;
  if (options.read_only && OnReadOnlyFileSystem(path)) {
    std::error_code ec;
    const auto wal_bytes = std::filesystem::file_size(path + "-wal", ec);
    if (!ec && wal_bytes > 0)
      return IoError(fmt::format(
          "sqlite {}: on a read-only file system, with writes still in its log {}-wal ({} "
          "bytes) that only a writable copy can read; open it once where it can be written "
          "(closing the last connection folds the log in), or copy the directory",
          path, path, wal_bytes));
    immutable = true;
  }
  auto db = SqliteDb::Open(path, flags | SQLITE_OPEN_NOMUTEX, immutable);
  if (!db) return db.error();
  if (Status s = ConfigureSqliteLedger(**db, options); !s) return s;
  if (Status s = MigrateSqliteLedger(**db, options.read_only); !s) return s;
  return MakeSqlLedger(std::make_unique<SqliteConnection>(std::move(*db)));
}

}  // namespace gpuledger::store
