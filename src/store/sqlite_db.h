#pragma once
// A thin RAII layer over the SQLite C API: a connection (SqliteDb), a prepared statement
// (SqliteStmt) and a transaction guard (SqliteTxn). Every error names the database path, what
// was being done and SQLite's own message, e.g.
//   "sqlite /var/lib/gpuledger/ledger.db: insert usage_hours: UNIQUE constraint failed: ..."
// Nothing here throws. Thread-compatible: a connection and its statements belong to one thread
// at a time.

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"

namespace gpuledger::store {

class SqliteStmt;

class SqliteDb {
 public:
  // Opens `path` with sqlite3_open_v2 `flags` (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, or
  // SQLITE_OPEN_READONLY). Fails with the path when the directory is missing or the file cannot
  // be opened. A file that is not a database is only detected by the first statement.
  // `immutable` opens it as a file nothing can change (SQLite's immutable=1 URI parameter): no
  // lock, no -shm file, the -wal file ignored; for a ledger on a read-only file system.
  static Result<std::unique_ptr<SqliteDb>> Open(const std::string& path, int flags,
                                                bool immutable = false);

  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  // Runs one or more statements that return no rows of interest (DDL, PRAGMA, BEGIN).
  Status Exec(std::string_view sql, std::string_view what);
  // Prepares a statement kept for reuse (SQLITE_PREPARE_PERSISTENT).
  Result<SqliteStmt> Prepare(std::string_view sql, std::string_view what);

  // An error "sqlite <path>: <what>: <sqlite3_errmsg>" for the connection's last failure.
  Error LastError(std::string_view what) const;
  bool ReadOnly() const;

  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }

 private:
  SqliteDb(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
};

// A prepared statement. Bind with 1-based indexes, Step, read columns with 0-based indexes,
// then Reset (Step leaves the statement reset on failure and when done, see Step).
class SqliteStmt {
 public:
  SqliteStmt() = default;
  SqliteStmt(SqliteStmt&& other) noexcept { *this = std::move(other); }
  SqliteStmt& operator=(SqliteStmt&& other) noexcept;
  ~SqliteStmt();

  void Bind(int index, std::int64_t value) { sqlite3_bind_int64(stmt_, index, value); }
  void Bind(int index, double value) { sqlite3_bind_double(stmt_, index, value); }
  void BindNull(int index) { sqlite3_bind_null(stmt_, index); }
  // Copied (SQLITE_TRANSIENT): callers bind temporaries (`gpu.str()`), and SQLite reads the
  // text at Step. ASan caught the uncopied form reading a dead stack buffer (an id held in a
  // temporary's small-string storage), which could have written another row's text.
  void Bind(int index, std::string_view value) {
    sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
  }

  // Copied, as text is.
  void BindBlob(int index, std::string_view bytes) {
    sqlite3_bind_blob(stmt_, index, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
  }

  // Runs a statement that returns no rows; resets it afterwards in every case.
  Status Run();
  // Advances to the next row: true with a row, false when done. On done or error the
  // statement is reset, so a loop `while (auto row = s.Step(); row && *row)` leaves it reusable.
  Result<bool> Step();
  // Steps through every row, calling on_row() while the statement is on it (on_row reads the
  // columns). The first error, of a step or of on_row, ends it; the statement is reset either way.
  Status ForEachRow(const std::function<Status()>& on_row);
  void Reset();

  std::int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Real(int col) const { return sqlite3_column_double(stmt_, col); }
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string Text(int col) const;
  // The column's text without a copy: valid until the statement steps, resets or converts
  // this column to another type.
  std::string_view View(int col) const;
  // The column's bytes without a copy, valid as View's.
  std::string_view Blob(int col) const {
    const void* bytes = sqlite3_column_blob(stmt_, col);
    return bytes == nullptr
               ? std::string_view()
               : std::string_view(static_cast<const char*>(bytes),
                                  static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)));
  }

 private:
  friend class SqliteDb;
  SqliteStmt(sqlite3_stmt* stmt, const SqliteDb* db, std::string what)
      : stmt_(stmt), db_(db), what_(std::move(what)) {}

  sqlite3_stmt* stmt_ = nullptr;
  const SqliteDb* db_ = nullptr;  // not owned; outlives the statement
  std::string what_;
};

// BEGIN on construction (via Begin), ROLLBACK on destruction unless Commit succeeded.
class SqliteTxn {
 public:
  // `immediate` takes the write lock at once (BEGIN IMMEDIATE), so a writer fails here rather
  // than half-way through.
  static Result<SqliteTxn> Begin(SqliteDb& db, bool immediate);
  SqliteTxn(SqliteTxn&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
  SqliteTxn& operator=(SqliteTxn&&) = delete;
  ~SqliteTxn();

  Status Commit();

 private:
  explicit SqliteTxn(SqliteDb* db) : db_(db) {}
  SqliteDb* db_;  // null once committed or rolled back
};

}  // namespace gpuledger::store
