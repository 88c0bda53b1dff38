#pragma once
// The PostgreSQL connection of the ledger (store/sql_connection.h): ?N placeholders sent as $N,
// a batch sent as one statement over arrays, a lost connection reconnected before an operation
// but never inside a transaction.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "store/postgres_db.h"
#include "store/sql_connection.h"

namespace gpuledger::store {

class PgConnection final : public SqlConnection {
 public:
  // Over `conn`, which outlives it; `in_transaction`: inside one its caller opened (the schema
  // migration's).
  PgConnection(PgConn& conn, bool in_transaction) : conn_(conn), in_transaction_(in_transaction) {}
  // Owning `conn` (the ledger's).
  explicit PgConnection(std::unique_ptr<PgConn> conn) : owned_(std::move(conn)), conn_(*owned_) {}

  const std::string& name() const override { return conn_.server(); }
  Status CheckWritable() const override { return Status::Ok(); }
  Result<std::unique_ptr<SqlTxn>> Begin(bool write) override;
  Status Run(std::string_view what, const std::string& sql,
             std::span<const SqlValue> args) override;
  Result<std::optional<std::int64_t>> FirstInt(std::string_view what, const std::string& sql,
                                               std::span<const SqlValue> args) override;
  Status ForEachRow(std::string_view what, const std::string& sql, std::span<const SqlValue> args,
                    const std::function<Status(SqlRow&)>& on_row) override;
  Status ForEachRowWithKey(std::string_view what, const std::string& select,
                           std::span<const SqlColumn> key, std::span<const SqlValue> cells,
                           const std::function<Status(SqlRow&)>& on_row) override;
  Status Upsert(std::string_view what, const SqlUpsert& upsert,
                std::span<const SqlValue> cells) override;
  Status Delete(std::string_view what, std::string_view table, std::span<const SqlColumn> key,
                std::span<const SqlValue> cells) override;

 private:
  // Reconnects a lost connection before a statement of its own; never inside a transaction,
  // whose statements must all reach the one session that began it.
  Status EnsureOutsideTransaction() { return in_transaction_ ? Status::Ok() : conn_.Ensure(); }
  Result<PgResult> Exec(std::string_view what, const std::string& sql, const PgParams& params);
  // `statement` ($N placeholders), `on_row` for each row: through a cursor inside a
  // transaction, else read whole (a cursor needs one).
  Status Query(std::string_view what, const std::string& statement, const PgParams& params,
               const std::function<Status(SqlRow&)>& on_row);

  std::unique_ptr<PgConn> owned_;
  PgConn& conn_;
  bool in_transaction_ = false;
};

}  // namespace gpuledger::store
