#pragma once
// A thin RAII layer over libpq: a connection that reconnects (PgConn), a result
// (PgResult), a transaction guard (PgTxn) and text-format parameters
// (PgParams). Every error names the server as "postgres://USER@HOST:PORT/DB"
// (never the password), what was being done and the server's own message, e.g.
//   "postgres://ledger@db:5432/gpu: insert usage_hours: duplicate key value
//   violates unique
//    constraint "usage_hours_pkey" (Key (...)=(...) already exists.) [23505]"
// A lost connection is kUnavailable; the next Ensure() reconnects. Nothing here
// throws. Thread-compatible: a connection and its results belong to one thread
// at a time.

#include <libpq-fe.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace gpuledger::store {

// "postgres://USER@HOST:PORT/DB" for a libpq URL or key=value string: what
// errors name. The password is never part of it. Unparseable input gives
// "postgres://(unparseable URL)".
std::string DescribePostgresServer(const std::string& url);

// The URL (or key=value string) as it may be printed: each password value, found by parsing
// it (userinfo, ?password=, password=), replaced by "***" and nothing else touched.
std::string RedactPostgresUrl(const std::string& url);

// Parameters of one statement, in text format ($1, $2, ... in the order added).
class PgParams {
 public:
  PgParams& Add(std::int64_t value);
  PgParams& Add(double value);
  PgParams& Add(std::string value);
  PgParams& AddNull();
  std::size_t size() const { return values_.size(); }

 private:
  friend class PgConn;
  std::vector<std::string> values_;
  std::vector<bool> null_;
};

// A result's rows in text format; columns 0-based. Parsing failures are broken
// invariants of the schema (the columns are typed): they read as 0 and are
// reported by the caller's checks.
class PgResult {
 public:
  PgResult() = default;
  explicit PgResult(PGresult* result) : result_(result) {}
  PgResult(PgResult&& other) noexcept : result_(other.result_) { other.result_ = nullptr; }
  PgResult& operator=(PgResult&& other) noexcept;
  PgResult(const PgResult&) = delete;
  PgResult& operator=(const PgResult&) = delete;
  ~PgResult();

  int rows() const { return result_ == nullptr ? 0 : PQntuples(result_); }
  bool IsNull(int row, int col) const { return PQgetisnull(result_, row, col) != 0; }
  std::string_view View(int row, int col) const {
    return {PQgetvalue(result_, row, col),
            static_cast<std::size_t>(PQgetlength(result_, row, col))};
  }
  std::string Text(int row, int col) const { return std::string(View(row, col)); }
  // false when the text is not a whole number / a float; `out` is then
  // untouched.
  bool Int(int row, int col, std::int64_t& out) const;
  bool Real(int row, int col, double& out) const;

 private:
  PGresult* result_ = nullptr;
};

class PgConn {
 public:
  // Connects to `url` (postgres://... or key=value), UTF8, with a 10 s connect
  // timeout unless the URL sets one. kUnavailable, naming the server, when it
  // cannot connect. `read_only`: every transaction of the session (and of each
  // reconnect) is read-only, so a write fails in the server, whatever the caller.
  static Result<std::unique_ptr<PgConn>> Open(const std::string& url, bool read_only = false);

  ~PgConn();
  PgConn(const PgConn&) = delete;
  PgConn& operator=(const PgConn&) = delete;

  // Reconnects when the connection was lost; callers run it at the start of
  // each operation, never inside a transaction. kUnavailable when the server
  // cannot be reached.
  Status Ensure();

  // Runs one parameterised statement (no parameters: may hold several
  // statements).
  Result<PgResult> Exec(std::string_view what, const std::string& sql, const PgParams& params = {});
  // COPY ... FROM STDIN with `data` in COPY's text format (see
  // AppendCopyField).
  Status CopyIn(std::string_view what, const std::string& copy_sql, std::string_view data);

  // "<server>: <what>: <message>" for a failed result (null: the connection's
  // last error), with the code from its SQLSTATE (class 08, 57P0x, 40001,
  // 40P01, 55P03: kUnavailable; 22, 23: kInvalidArgument). A lost connection is
  // kUnavailable whatever the SQLSTATE.
  Error MakeError(std::string_view what, const PGresult* result) const;
  // SQLSTATE of the last failed Exec/CopyIn ("" when none or not from the
  // server).
  const std::string& last_sqlstate() const { return last_sqlstate_; }

  const std::string& server() const { return server_; }
  bool connected() const { return PQstatus(conn_) == CONNECTION_OK; }

 private:
  PgConn(PGconn* conn, std::string url, std::string server, bool read_only)
      : conn_(conn), url_(std::move(url)), server_(std::move(server)), read_only_(read_only) {}
  Status Setup();                                   // per-session settings, after every (re)connect
  Error ConnectError(std::string_view what) const;  // kUnavailable with libpq's reason

  PGconn* conn_;
  std::string url_;     // holds the password: never printed
  std::string server_;  // DescribePostgresServer(url_)
  bool read_only_ = false;
  std::string last_sqlstate_;
};

// Reads typed columns of one row of a result, remembering the first column that did not
// parse (the row codecs' Row: Int, Text, View).
class PgRow {
 public:
  PgRow(const PgResult& r, int row) : r_(r), row_(row) {}
  std::string Text(int col) const { return r_.Text(row_, col); }
  std::string_view View(int col) const { return r_.View(row_, col); }
  bool IsNull(int col) const { return r_.IsNull(row_, col); }
  std::int64_t Int(int col) {
    std::int64_t v = 0;
    if (!r_.Int(row_, col, v) && bad_col_ < 0) bad_col_ = col;
    return v;
  }
  int bad_col() const { return bad_col_; }

 private:
  const PgResult& r_;
  int row_;
  int bad_col_ = -1;
};

// A query read through a named cursor inside the caller's transaction, a batch at a time: a
// month of a large cluster is never held as one result. Two cursors with different names can
// be read side by side.
class PgCursor {
 public:
  static constexpr int kBatchRows = 20000;
  static Result<PgCursor> Open(PgConn& conn, std::string name, std::string what,
                               const std::string& sql, const PgParams& params = {});
  // The next row (valid until the next call), or nullptr at the end; the cursor closes there.
  Result<PgRow*> Next();

 private:
  PgCursor(PgConn& conn, std::string name, std::string what)
      : conn_(&conn), name_(std::move(name)), what_(std::move(what)) {}
  PgConn* conn_;
  std::string name_;
  std::string what_;
  PgResult batch_;
  int next_ = 0;
  bool done_ = false;
  std::optional<PgRow> row_;
};

// Runs `sql` through a cursor, `on_row` for each row.
Status ForEachPgRow(PgConn& conn, std::string_view what, const std::string& sql,
                    const PgParams& params, const std::function<Status(PgRow&)>& on_row);

// BEGIN on construction (via Begin), ROLLBACK on destruction unless Commit
// succeeded. `begin` is the statement that opens it ("BEGIN", "BEGIN ISOLATION
// LEVEL REPEATABLE READ READ ONLY").
class PgTxn {
 public:
  static Result<PgTxn> Begin(PgConn& conn, const std::string& begin = "BEGIN");
  PgTxn(PgTxn&& other) noexcept : conn_(other.conn_) { other.conn_ = nullptr; }
  PgTxn& operator=(PgTxn&&) = delete;
  ~PgTxn();

  Status Commit();

 private:
  explicit PgTxn(PgConn* conn) : conn_(conn) {}
  PgConn* conn_;  // null once committed or rolled back
};

// Appends `value` to a COPY text-format row, escaping backslash, tab, newline
// and CR.
void AppendCopyField(std::string& row, std::string_view value);
// bytea in its hex text form, "\x0a1b..." (a parameter or an array element).
std::string ByteaHex(std::string_view bytes);
// The bytes of bytea's hex text form; false (and `out` unspecified) for text that is not one.
bool DecodeByteaHex(std::string_view text, std::string& out);
// Appends `text` as an element of an array literal: quoted, `"` and `\` escaped.
void AppendArrayText(std::string& out, std::string_view text);
// A PostgreSQL array literal of texts ({"a","b\"c"}) for a text[] parameter.
std::string TextArrayLiteral(const std::vector<std::string_view>& values);
// A PostgreSQL array literal of integers ({1,-2,3}) for a bigint[] or integer[] parameter.
std::string Int64ArrayLiteral(std::span<const std::int64_t> values);

}  // namespace gpuledger::store
