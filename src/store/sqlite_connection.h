#pragma once
// The SQLite connection of the ledger (store/sql_connection.h): statements prepared once and
// kept, a batch run a statement a row inside the caller's transaction.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "store/sql_connection.h"
#include "store/sqlite_db.h"

namespace gpuledger::store {

class SqliteConnection final : public SqlConnection {
 public:
  // Over `db`, which outlives it (the schema migration's).
  explicit SqliteConnection(SqliteDb& db) : db_(db), name_("sqlite " + db.path()) {}
  // Owning `db` (the ledger's).
  explicit SqliteConnection(std::unique_ptr<SqliteDb> db)
      : owned_(std::move(db)), db_(*owned_), name_("sqlite " + db_.path()) {}

  const std::string& name() const override { return name_; }
  Status CheckWritable() const override;
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
  // The statement for `sql`, prepared once and kept (the ledger sends a few dozen texts); kept
  // while any statement is being stepped. A statement is not run again from its own rows'
  // callback (no caller does: each nested read is another text).
  Result<SqliteStmt*> Statement(std::string_view what, const std::string& sql);
  // Counts the statements being stepped while it lives.
  class Stepping {
   public:
    explicit Stepping(int& count) : count_(count) { ++count_; }
    ~Stepping() { --count_; }
    Stepping(const Stepping&) = delete;
    Stepping& operator=(const Stepping&) = delete;

   private:
    int& count_;
  };
  // Runs `sql` once per row of `cells`, each row bound as its parameters.
  Status RunPerRow(std::string_view what, const std::string& sql, std::size_t columns,
                   std::span<const SqlValue> cells);

  static constexpr std::size_t kMaxStatements = 64;
  std::unique_ptr<SqliteDb> owned_;  // declared first: the statements finalize before it closes
  SqliteDb& db_;
  std::string name_;
  std::map<std::string, SqliteStmt, std::less<>> statements_;
  int stepping_ = 0;  // statements being stepped now
};

}  // namespace gpuledger::store
