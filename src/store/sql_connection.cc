#include "store/sql_connection.h"

#include <fmt/format.h>

namespace gpuledger::store {

std::string InsertIntoSql(const SqlUpsert& upsert) {
  std::string sql = fmt::format("INSERT INTO {} (", upsert.table);
  for (std::size_t i = 0; i < upsert.columns.size(); ++i) {
    sql += fmt::format("{}{}", i == 0 ? "" : ", ", upsert.columns[i].name);
  }
  return sql + ") ";
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
