#include "store/sql_connection.h"

#include <fmt/format.h>

namespace gpuledger::store {

std::string ColumnList(std::span<const SqlColumn> columns) {
  std::string out;
  for (const SqlColumn& column : columns) {
    out += fmt::format("{}{}", out.empty() ? "" : ", ", column.name);
  }
  return out;
}

std::string InsertIntoSql(const SqlUpsert& upsert) {
  return fmt::format("INSERT INTO {} ({}) ", upsert.table, ColumnList(upsert.columns));
}

std::string OnConflictSql(const SqlUpsert& upsert) {
  std::string key;
  std::string set;
  std::string changed;
  for (std::size_t i = 0; i < upsert.columns.size(); ++i) {
    const std::string_view name = upsert.columns[i].name;
    if (i < upsert.key_columns) {
      key += fmt::format("{}{}", key.empty() ? "" : ", ", name);
      continue;
    }
    set += fmt::format("{}{} = excluded.{}", set.empty() ? "" : ", ", name, name);
    changed += fmt::format("{}{}.{} IS DISTINCT FROM excluded.{}", changed.empty() ? "" : " OR ",
                           upsert.table, name, name);
  }
  std::string sql = fmt::format(" ON CONFLICT ({}) DO UPDATE SET {}", key, set);
  if (upsert.skip_unchanged) sql += " WHERE " + changed;
  return sql;
}

}  // namespace gpuledger::store
