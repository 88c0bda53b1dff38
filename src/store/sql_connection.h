#pragma once
// What the ledger (store/sql_ledger.h, store/compact_hours.h) needs of a database, so that it
// is written once over SQLite and PostgreSQL: statements with numbered parameters (?1, ?2, ...;
// a dialect that spells them otherwise rewrites them), rows read by column, transactions, and
// batch upserts, deletes and reads by key. The SQL the ledger sends is what both databases read
// alike; what they spell differently (placeholders, how many rows one statement carries,
// prepared-statement reuse, reconnecting) is the connection's.
// Thread-compatible: one connection, one thread at a time.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/result.h"

namespace gpuledger::store {

// Bytes for a BLOB or bytea column (a text is a std::string_view).
struct SqlBytes {
  std::string_view bytes;
};

// A statement parameter or a batch cell: NULL, an integer, a text or bytes (not owned: valid for
// the call).
using SqlValue = std::variant<std::monostate, std::int64_t, std::string_view, SqlBytes>;

// One row of a result while it is current; columns 0-based.
class SqlRow {
 public:
  virtual ~SqlRow() = default;
  // 0 for a value that is not an integer (a broken schema invariant): Check says so.
  virtual std::int64_t Int(int col) = 0;
  virtual std::string Text(int col) const = 0;
  // A bytes column, valid while the row is current; empty for one that is not bytes (Check says
  // so).
  virtual std::string_view Bytes(int col) = 0;
  virtual bool IsNull(int col) const = 0;
  // An error naming `table` and the first column Int or Bytes could not read; Ok when there was
  // none.
  virtual Status Check(std::string_view table) const = 0;
};

// A transaction, rolled back when destroyed without a successful Commit.
class SqlTxn {
 public:
  virtual ~SqlTxn() = default;
  virtual Status Commit() = 0;
};

enum class SqlType { kInt, kText, kBytes };
struct SqlColumn {
  std::string_view name;
  SqlType type;
};

// Rows written as upserts: inserted, or, on a key that exists, every column outside the key
// replaced. `key` is the table's primary key, its first columns.
struct SqlUpsert {
  std::string_view table;
  std::span<const SqlColumn> columns;
  std::size_t key_columns = 0;
  // An existing row already equal in the replaced columns is not written again (PostgreSQL
  // would keep a dead row version of each for vacuum to find).
  bool skip_unchanged = false;
};

// "a, b, c" over `columns`.
std::string ColumnList(std::span<const SqlColumn> columns);
// "INSERT INTO t (a, b, c) " (the rows' source follows).
std::string InsertIntoSql(const SqlUpsert& upsert);
// " ON CONFLICT (a, b) DO UPDATE SET c = excluded.c[ WHERE ...]".
std::string OnConflictSql(const SqlUpsert& upsert);

class SqlConnection {
 public:
  virtual ~SqlConnection() = default;

  // What errors start with: "sqlite /path" or "postgres://USER@HOST:PORT/DB".
  virtual const std::string& name() const = 0;
  // An IoError saying why, for a ledger opened or found read-only.
  virtual Status CheckWritable() const = 0;
  // A write transaction (holding the write lock from the start) or a read snapshot.
  virtual Result<std::unique_ptr<SqlTxn>> Begin(bool write) = 0;

  // One statement returning no rows of interest.
  virtual Status Run(std::string_view what, const std::string& sql,
                     std::span<const SqlValue> args) = 0;
  // The first column of the first row as an integer (an INSERT ... RETURNING id), or nullopt
  // when there is no row.
  virtual Result<std::optional<std::int64_t>> FirstInt(std::string_view what,
                                                       const std::string& sql,
                                                       std::span<const SqlValue> args) = 0;
  // One query, `on_row` for each row; its first error ends the read and is returned. Any number
  // of rows: inside a transaction they are read a batch at a time.
  virtual Status ForEachRow(std::string_view what, const std::string& sql,
                            std::span<const SqlValue> args,
                            const std::function<Status(SqlRow&)>& on_row) = 0;
  // `select` ("SELECT ... FROM t", no WHERE) for the rows whose `key` columns equal one of the
  // tuples in `cells`, in any order, `on_row` for each.
  virtual Status ForEachRowWithKey(std::string_view what, const std::string& select,
                                   std::span<const SqlColumn> key, std::span<const SqlValue> cells,
                                   const std::function<Status(SqlRow&)>& on_row) = 0;
  // Upserts the rows in `cells` (row after row, upsert.columns.size() cells each). No two rows
  // may share a key (one statement may not touch a row twice).
  virtual Status Upsert(std::string_view what, const SqlUpsert& upsert,
                        std::span<const SqlValue> cells) = 0;
  // Deletes the rows whose `key` columns equal one of the tuples in `cells`.
  virtual Status Delete(std::string_view what, std::string_view table,
                        std::span<const SqlColumn> key, std::span<const SqlValue> cells) = 0;
};

}  // namespace gpuledger::store
