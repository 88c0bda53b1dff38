#pragma once
// The SQLite dialect of the compact hour tables (store/compact_hours.h): the ledger's own and
// the migration's, on one connection.

#include <array>
#include <memory>

#include "store/compact_hours.h"
#include "store/sqlite_db.h"

namespace gpuledger::store {

class SqliteHourTables final : public HourTables {
 public:
  // Prepares its statements on `db`, which must have the schema-8 tables and outlive this.
  static Result<std::unique_ptr<SqliteHourTables>> Prepare(SqliteDb& db);

  Result<std::int64_t> Intern(Dimension dimension, const DimensionKey& key) override;
  Status Lookup(Dimension dimension, std::span<const std::int64_t> ids,
                const std::function<Status(std::int64_t, DimensionKey)>& on_entry) override;
  Status PutHour(const StoredHour& row) override;
  Status ForEachHour(std::int64_t from_hour, std::int64_t to_hour,
                     const std::function<Status(const StoredHour& row)>& on_row) override;
  Status PodLabels(std::span<const PodKey> pods, LedgerScan& scan) override;
  Status NamespaceLabels(std::span<const std::string> namespaces, LedgerScan& scan) override;

 private:
  struct DictionaryStatements {
    SqliteStmt find;
    SqliteStmt add;
    SqliteStmt entry;
  };
  SqliteHourTables() = default;

  std::array<DictionaryStatements, kDimensions.size()> dictionaries_;
  SqliteStmt put_hour_;
  SqliteStmt read_hours_;
  SqliteStmt pod_labels_;
  SqliteStmt namespace_labels_;
};

}  // namespace gpuledger::store
