// The PostgreSQL ledger, for clusters whose ledger lives on a server they already run: the
// ledger itself (store/sql_ledger.cc) over a PgConnection, with the same tables,
// keys, semantics and read order as the SQLite ledger.
//
// Every text column is COLLATE "C" so keys and ORDER BY compare bytes, as SQLite's BINARY
// does. The schema is versioned in `meta` and migrated on open under an advisory lock, so two
// servers opening one database at once migrate it once. Tables live in the first schema of the
// connection's search_path (set one with ?options=-csearch_path%3DNAME in the URL). A batch
// travels as one statement over arrays, not a round trip a row. Connection loss is
// kUnavailable and the next call reconnects.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "store/ledger_store.h"
#include "store/postgres_connection.h"
#include "store/postgres_db.h"
#include "store/postgres_schema.h"
#include "store/sql_ledger.h"

namespace gpuledger::store {
namespace {

// Labels and dictionary entries are asked for this many keys at a time: one round trip each,
// parameters of bounded size.
constexpr std::size_t kKeyBatch = 10'000;

class PgSqlRow final : public SqlRow {
 public:
  PgSqlRow(PgRow& row, const std::string& server) : row_(row), server_(server) {}
  std::int64_t Int(int col) override { return row_.Int(col); }
  std::string Text(int col) const override { return row_.Text(col); }
  std::string_view Bytes(int col) override {
    if (!DecodeByteaHex(row_.View(col), bytes_)) {
      bytes_.clear();
      if (bad_bytes_col_ < 0) bad_bytes_col_ = col;
    }
    return bytes_;
  }
  bool IsNull(int col) const override { return row_.IsNull(col); }
  Status Check(std::string_view table) const override {
    if (row_.bad_col() >= 0) {
      return Internal(fmt::format("{}: read {}: column {} does not hold a number", server_, table,
                                  row_.bad_col()));
    }
    if (bad_bytes_col_ >= 0) {
      return Internal(fmt::format("{}: read {}: column {} does not hold bytea in hex", server_,
                                  table, bad_bytes_col_));
    }
    return Status::Ok();
  }

 private:
  PgRow& row_;
  const std::string& server_;
  std::string bytes_;
  int bad_bytes_col_ = -1;
};

// `?N` placeholders as PostgreSQL spells them, `$N`. The ledger's SQL has no other `?`.
std::string WithDollarPlaceholders(std::string sql) {
  for (std::size_t i = 0; i + 1 < sql.size(); ++i) {
    if (sql[i] == '?' && sql[i + 1] >= '0' && sql[i + 1] <= '9') sql[i] = '$';
  }
  return sql;
}

PgParams Params(std::span<const SqlValue> args) {
  PgParams params;
  for (const SqlValue& arg : args) {
    if (const auto* n = std::get_if<std::int64_t>(&arg)) {
      params.Add(*n);
    } else if (const auto* text = std::get_if<std::string_view>(&arg)) {
      params.Add(std::string(*text));
    } else if (const auto* bytes = std::get_if<SqlBytes>(&arg)) {
      params.Add(ByteaHex(bytes->bytes));
    } else {
      params.AddNull();
    }
  }
  return params;
}

// Column `col` of row-major `cells` as an array literal ({1,NULL}, {"a","b\"c"}).
std::string ArrayLiteral(std::span<const SqlValue> cells, std::size_t columns, std::size_t col) {
  std::string out = "{";
  for (std::size_t at = col; at < cells.size(); at += columns) {
    if (at != col) out.push_back(',');
    if (const auto* n = std::get_if<std::int64_t>(&cells[at])) {
      out += std::to_string(*n);
    } else if (const auto* text = std::get_if<std::string_view>(&cells[at])) {
      AppendArrayText(out, *text);
    } else if (const auto* bytes = std::get_if<SqlBytes>(&cells[at])) {
      AppendArrayText(out, ByteaHex(bytes->bytes));
    } else {
      out += "NULL";
    }
  }
  out.push_back('}');
  return out;
}

// "unnest($1::text[], $2::bigint[], ...)" over `columns`, with the arrays in `params`.
std::string Unnest(std::span<const SqlColumn> columns, std::span<const SqlValue> cells,
                   PgParams& params) {
  std::string sql = "unnest(";
  for (std::size_t i = 0; i < columns.size(); ++i) {
    params.Add(ArrayLiteral(cells, columns.size(), i));
    constexpr std::array<std::string_view, 3> kArrayTypes = {"bigint", "text", "bytea"};
    sql += fmt::format("{}${}::{}[]", i == 0 ? "" : ", ", i + 1,
                       kArrayTypes[static_cast<std::size_t>(columns[i].type)]);
  }
  return sql + ")";
}

class PgSqlTxn final : public SqlTxn {
 public:
  PgSqlTxn(PgTxn txn, bool& in_transaction) : txn_(std::move(txn)), in_(in_transaction) {
    in_ = true;
  }
  ~PgSqlTxn() override { in_ = false; }
  PgSqlTxn(const PgSqlTxn&) = delete;
  PgSqlTxn& operator=(const PgSqlTxn&) = delete;
  Status Commit() override { return txn_.Commit(); }

 private:
  PgTxn txn_;
  bool& in_;
};

}  // namespace

Result<std::unique_ptr<SqlTxn>> PgConnection::Begin(bool write) {
  if (Status s = EnsureOutsideTransaction(); !s) return s;
  auto txn =
      PgTxn::Begin(conn_, write ? "BEGIN" : "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  if (!txn) return txn.error();
  return std::unique_ptr<SqlTxn>(std::make_unique<PgSqlTxn>(std::move(*txn), in_transaction_));
}

Result<PgResult> PgConnection::Exec(std::string_view what, const std::string& sql,
                                    const PgParams& params) {
  if (Status s = EnsureOutsideTransaction(); !s) return s;
  return conn_.Exec(what, sql, params);
}

Status PgConnection::Run(std::string_view what, const std::string& sql,
                         std::span<const SqlValue> args) {
  auto r = Exec(what, WithDollarPlaceholders(sql), Params(args));
  return r ? Status::Ok() : r.status();
}

Result<std::optional<std::int64_t>> PgConnection::FirstInt(std::string_view what,
                                                           const std::string& sql,
                                                           std::span<const SqlValue> args) {
  auto r = Exec(what, WithDollarPlaceholders(sql), Params(args));
  if (!r) return r.error();
  if (r->rows() == 0) return std::optional<std::int64_t>();
  std::int64_t first = 0;
  if (!r->Int(0, 0, first)) {
    return Internal(fmt::format("{}: {}: column 0 does not hold a number", name(), what));
  }
  return std::optional<std::int64_t>(first);
}

Status PgConnection::Query(std::string_view what, const std::string& statement,
                           const PgParams& params, const std::function<Status(SqlRow&)>& on_row) {
  auto each = [&](PgRow& pg_row) {
    PgSqlRow row(pg_row, conn_.server());
    return on_row(row);
  };
  if (in_transaction_) return ForEachPgRow(conn_, what, statement, params, each);
  auto r = Exec(what, statement, params);
  if (!r) return r.status();
  for (int i = 0; i < r->rows(); ++i) {
    PgRow pg_row(*r, i);
    if (Status s = each(pg_row); !s) return s;
  }
  return Status::Ok();
}

Status PgConnection::ForEachRow(std::string_view what, const std::string& sql,
                                std::span<const SqlValue> args,
                                const std::function<Status(SqlRow&)>& on_row) {
  return Query(what, WithDollarPlaceholders(sql), Params(args), on_row);
}

Status PgConnection::ForEachRowWithKey(std::string_view what, const std::string& select,
                                       std::span<const SqlColumn> key,
                                       std::span<const SqlValue> cells,
                                       const std::function<Status(SqlRow&)>& on_row) {
  const std::size_t batch_cells = kKeyBatch * key.size();
  for (std::size_t first = 0; first < cells.size(); first += batch_cells) {
    const auto batch = cells.subspan(first, std::min(batch_cells, cells.size() - first));
    PgParams params;
    const std::string sql = fmt::format("{} WHERE ({}) IN (SELECT * FROM {})", select,
                                        ColumnList(key), Unnest(key, batch, params));
    if (Status s = Query(what, sql, params, on_row); !s) return s;
  }
  return Status::Ok();
}

Status PgConnection::Upsert(std::string_view what, const SqlUpsert& upsert,
                            std::span<const SqlValue> cells) {
  if (cells.empty()) return Status::Ok();
  PgParams params;
  const std::string sql = InsertIntoSql(upsert) + "SELECT * FROM " +
                          Unnest(upsert.columns, cells, params) + OnConflictSql(upsert);
  auto r = Exec(what, sql, params);
  return r ? Status::Ok() : r.status();
}

Status PgConnection::Delete(std::string_view what, std::string_view table,
                            std::span<const SqlColumn> key, std::span<const SqlValue> cells) {
  if (cells.empty()) return Status::Ok();
  PgParams params;
  const std::string sql = fmt::format("DELETE FROM {} WHERE ({}) IN (SELECT * FROM {})", table,
                                      ColumnList(key), Unnest(key, cells, params));
  auto r = Exec(what, sql, params);
  return r ? Status::Ok() : r.status();
}

Result<std::unique_ptr<LedgerStore>> OpenPostgresLedger(const std::string& url) {
  return OpenPostgresLedger(url, {});
}

Result<std::unique_ptr<LedgerStore>> OpenPostgresLedger(const std::string& url,
                                                        const PostgresLedgerOptions& options) {
  auto conn = PgConn::Open(url, options.read_only);
  if (!conn) return conn.error();
  Status current =
      options.read_only ? CheckPostgresLedgerCurrent(**conn) : MigratePostgresLedger(**conn);
  if (!current) return current;
  return MakeSqlLedger(std::make_unique<PgConnection>(std::move(*conn)));
}

}  // namespace gpuledger::store
