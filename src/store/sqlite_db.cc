#include "store/sqlite_db.h"

#include <fmt/format.h>

#include <filesystem>
#include <system_error>
#include <utility>

namespace gpuledger::store {
namespace {

Error MakeError(int rc, const std::string& path, std::string_view what, std::string_view msg) {
  ErrorCode code = ErrorCode::kIo;
  switch (rc & 0xff) {
    case SQLITE_CONSTRAINT:
    case SQLITE_MISMATCH:
    case SQLITE_RANGE:
    case SQLITE_TOOBIG:
      code = ErrorCode::kInvalidArgument;
      break;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      code = ErrorCode::kUnavailable;
      break;
    case SQLITE_INTERNAL:
    case SQLITE_MISUSE:
      code = ErrorCode::kInternal;
      break;
    default:
      break;
  }
  return Error{code, fmt::format("sqlite {}: {}: {}", path, what, msg)};
}

}  // namespace

namespace {

// `path` as an SQLite URI filename with `query`: the characters a URI gives a meaning to are
// escaped, so any file name opens the file it names.
std::string UriOf(const std::string& path, std::string_view query) {
  std::string uri = "file:";
  for (const char c : path) {
    if (c == '%' || c == '?' || c == '#')
      uri += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    else
      uri += c;
  }
  uri += '?';
  uri += query;
  return uri;
}

}  // namespace

Result<std::unique_ptr<SqliteDb>> SqliteDb::Open(const std::string& path, int flags,
                                                 bool immutable) {
  if (path.empty()) return InvalidArgument("sqlite: empty database path");
  std::error_code ec;
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
    return IoError(
        fmt::format("sqlite {}: cannot open: directory {} does not exist", path, parent.string()));
  }
  if (std::filesystem::is_directory(path, ec)) {
    return IoError(fmt::format("sqlite {}: cannot open: is a directory", path));
  }
  if ((flags & SQLITE_OPEN_CREATE) == 0 && !std::filesystem::exists(path, ec)) {
    return IoError(fmt::format("sqlite {}: cannot open read-only: no such file", path));
  }
  sqlite3* db = nullptr;
  const std::string name = immutable ? UriOf(path, "immutable=1") : path;
  int rc = sqlite3_open_v2(name.c_str(), &db, immutable ? flags | SQLITE_OPEN_URI : flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);  // a handle comes back even on failure; null is a no-op
    return MakeError(rc, path, "open", msg);
  }
  sqlite3_extended_result_codes(db, 1);
  return std::unique_ptr<SqliteDb>(new SqliteDb(db, path));
}

SqliteDb::~SqliteDb() { sqlite3_close_v2(db_); }

Status SqliteDb::Exec(std::string_view sql, std::string_view what) {
  std::string text(sql);
  if (sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
    return LastError(what);
  }
  return Status::Ok();
}

Result<SqliteStmt> SqliteDb::Prepare(std::string_view sql, std::string_view what) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return LastError(fmt::format("prepare {}", what));
  }
  return SqliteStmt(stmt, this, std::string(what));
}

Error SqliteDb::LastError(std::string_view what) const {
  return MakeError(sqlite3_extended_errcode(db_), path_, what, sqlite3_errmsg(db_));
}

bool SqliteDb::ReadOnly() const { return sqlite3_db_readonly(db_, "main") == 1; }

SqliteStmt& SqliteStmt::operator=(SqliteStmt&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    stmt_ = std::exchange(other.stmt_, nullptr);
    db_ = other.db_;
    what_ = std::move(other.what_);
  }
  return *this;
}

SqliteStmt::~SqliteStmt() { sqlite3_finalize(stmt_); }

Status SqliteStmt::Run() {
  auto row = Step();
  if (!row) return row.status();
  if (*row) Reset();  // a statement that returned a row anyway (e.g. a PRAGMA)
  return Status::Ok();
}

Result<bool> SqliteStmt::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) {
    Reset();
    return false;
  }
  // Take the message before the reset, which may replace it.
  Error error = db_->LastError(what_);
  Reset();
  return error;
}

Status SqliteStmt::ForEachRow(const std::function<Status()>& on_row) {
  while (true) {
    auto row = Step();
    if (!row) return row.status();
    if (!*row) return Status::Ok();
    if (Status s = on_row(); !s) {
      Reset();
      return s;
    }
  }
}

void SqliteStmt::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

std::string SqliteStmt::Text(int col) const { return std::string(View(col)); }

std::string_view SqliteStmt::View(int col) const {
  const unsigned char* text = sqlite3_column_text(stmt_, col);
  if (text == nullptr) return {};
  return {reinterpret_cast<const char*>(text),
          static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col))};
}

Result<SqliteTxn> SqliteTxn::Begin(SqliteDb& db, bool immediate) {
  Status s = db.Exec(immediate ? "BEGIN IMMEDIATE" : "BEGIN", "begin transaction");
  if (!s) return s;
  return SqliteTxn(&db);
}

SqliteTxn::~SqliteTxn() {
  if (db_ != nullptr) {
    // Best effort: if SQLite already rolled back (e.g. on SQLITE_FULL) this fails harmlessly.
    (void)db_->Exec("ROLLBACK", "rollback");
  }
}

Status SqliteTxn::Commit() {
  Status s = db_->Exec("COMMIT", "commit");
  if (s) db_ = nullptr;  // on failure the destructor rolls back
  return s;
}

}  // namespace gpuledger::store
