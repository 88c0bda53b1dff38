// The PostgreSQL ledger, for clusters whose ledger lives on a server they already run: the
// ledger itself (store/sql_ledger.cc) over this file's PgConnection, with the same tables,
// keys, semantics and read order as the SQLite ledger.
//
// Every text column is COLLATE "C" so keys and ORDER BY compare bytes, as SQLite's BINARY
// does. The schema is versioned in `meta` and migrated on open under an advisory lock, so two
// servers opening one database at once migrate it once. Tables live in the first schema of the
// connection's search_path (set one with ?options=-csearch_path%3DNAME in the URL). A batch
// travels as one statement over arrays, not a round trip a row. Connection loss is
// kUnavailable and the next call reconnects.

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "store/ledger_store.h"
#include "store/postgres_db.h"
#include "store/postgres_hours.h"
#include "store/postgres_schema.h"
#include "store/sql_ledger.h"

namespace gpuledger::store {
namespace {

class PgSqlRow final : public SqlRow {
 public:
  PgSqlRow(PgRow& row, const std::string& server) : row_(row), server_(server) {}
  std::int64_t Int(int col) override { return row_.Int(col); }
  std::string Text(int col) const override { return row_.Text(col); }
  bool IsNull(int col) const override { return row_.IsNull(col); }
  Status Check(std::string_view table) const override {
    if (row_.bad_col() < 0) return Status::Ok();
    return Internal(fmt::format("{}: read {}: column {} does not hold a number", server_, table,
                                row_.bad_col()));
  }

 private:
  PgRow& row_;
  const std::string& server_;
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
    sql += fmt::format("{}${}::{}[]", i == 0 ? "" : ", ", i + 1,
                       columns[i].type == SqlType::kInt ? "bigint" : "text");
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

class PgConnection final : public SqlConnection {
 public:
  explicit PgConnection(std::unique_ptr<PgConn> conn) : conn_(std::move(conn)), hours_(*conn_) {}

  const std::string& name() const override { return conn_->server(); }
  Status CheckWritable() const override { return Status::Ok(); }
  Result<std::unique_ptr<SqlTxn>> Begin(bool write) override;
  Status Run(std::string_view what, const std::string& sql,
             std::span<const SqlValue> args) override;
  Status ForEachRow(std::string_view what, const std::string& sql, std::span<const SqlValue> args,
                    const std::function<Status(SqlRow&)>& on_row) override;
  Status Upsert(std::string_view what, const SqlUpsert& upsert,
                std::span<const SqlValue> cells) override;
  Status Delete(std::string_view what, std::string_view table, std::span<const SqlColumn> key,
                std::span<const SqlValue> cells) override;
  HourTables& hours() override { return hours_; }

 private:
  // Reconnects a lost connection before a statement of its own; never inside a transaction,
  // whose statements must all reach the one session that began it.
  Status EnsureOutsideTransaction() { return in_transaction_ ? Status::Ok() : conn_->Ensure(); }
  Status Exec(std::string_view what, const std::string& sql, const PgParams& params);

  std::unique_ptr<PgConn> conn_;
  PgHourTables hours_;
  bool in_transaction_ = false;
};

Result<std::unique_ptr<SqlTxn>> PgConnection::Begin(bool write) {
  if (Status s = EnsureOutsideTransaction(); !s) return s;
  auto txn =
      PgTxn::Begin(*conn_, write ? "BEGIN" : "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  if (!txn) return txn.error();
  return std::unique_ptr<SqlTxn>(std::make_unique<PgSqlTxn>(std::move(*txn), in_transaction_));
}

Status PgConnection::Exec(std::string_view what, const std::string& sql, const PgParams& params) {
  if (Status s = EnsureOutsideTransaction(); !s) return s;
  auto r = conn_->Exec(what, sql, params);
  return r ? Status::Ok() : r.status();
}

Status PgConnection::Run(std::string_view what, const std::string& sql,
                         std::span<const SqlValue> args) {
  return Exec(what, WithDollarPlaceholders(sql), Params(args));
}

Status PgConnection::ForEachRow(std::string_view what, const std::string& sql,
                                std::span<const SqlValue> args,
                                const std::function<Status(SqlRow&)>& on_row) {
  const std::string statement = WithDollarPlaceholders(sql);
  const PgParams params = Params(args);
  auto each = [&](PgRow& pg_row) {
    PgSqlRow row(pg_row, conn_->server());
    return on_row(row);
  };
  // Inside a transaction a cursor reads any number of rows a batch at a time; outside one (a
  // cursor needs one) the result is read whole.
  if (in_transaction_) return ForEachPgRow(*conn_, what, statement, params, each);
  if (Status s = conn_->Ensure(); !s) return s;
  auto r = conn_->Exec(what, statement, params);
  if (!r) return r.status();
  for (int i = 0; i < r->rows(); ++i) {
    PgRow pg_row(*r, i);
    if (Status s = each(pg_row); !s) return s;
  }
  return Status::Ok();
}

Status PgConnection::Upsert(std::string_view what, const SqlUpsert& upsert,
                            std::span<const SqlValue> cells) {
  if (cells.empty()) return Status::Ok();
  PgParams params;
  const std::string sql = InsertIntoSql(upsert) + "SELECT * FROM " +
                          Unnest(upsert.columns, cells, params) + OnConflictSql(upsert);
  return Exec(what, sql, params);
}

Status PgConnection::Delete(std::string_view what, std::string_view table,
                            std::span<const SqlColumn> key, std::span<const SqlValue> cells) {
  if (cells.empty()) return Status::Ok();
  std::string columns;
  for (const SqlColumn& column : key) {
    columns += fmt::format("{}{}", columns.empty() ? "" : ", ", column.name);
  }
  PgParams params;
  const std::string sql = fmt::format("DELETE FROM {} WHERE ({}) IN (SELECT * FROM {})", table,
                                      columns, Unnest(key, cells, params));
  return Exec(what, sql, params);
}

}  // namespace

Result<std::unique_ptr<LedgerStore>> OpenPostgresLedger(const std::string& url) {
  auto conn = PgConn::Open(url);
  if (!conn) return conn.error();
  if (Status s = MigratePostgresLedger(**conn); !s) return s;
  return MakeSqlLedger(std::make_unique<PgConnection>(std::move(*conn)));
}

}  // namespace gpuledger::store
