#include "store/sqlite_hours.h"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace gpuledger::store {

Result<std::unique_ptr<SqliteHourTables>> SqliteHourTables::Prepare(SqliteDb& db) {
  std::unique_ptr<SqliteHourTables> tables(new SqliteHourTables());
  struct Spec {
    SqliteStmt* stmt;
    std::string sql;
    std::string what;
  };
  std::vector<Spec> specs = {
      {&tables->put_hour_,
       "INSERT OR REPLACE INTO hours (hour, gpu, placement, record) VALUES (?1, ?2, ?3, ?4)",
       "write hours"},
      {&tables->read_hours_,
       "SELECT hour, gpu, placement, record FROM hours "
       "WHERE hour >= ?1 AND hour < ?2 ORDER BY hour, gpu",
       "read hours"},
      {&tables->pod_labels_,
       "SELECT key, value FROM pod_labels WHERE namespace = ?1 AND pod = ?2 AND pod_uid = ?3",
       "read pod_labels"},
      {&tables->namespace_labels_, "SELECT key, value FROM namespace_labels WHERE namespace = ?1",
       "read namespace_labels"},
  };
  for (Dimension dimension : kDimensions) {
    DictionaryStatements& d = tables->dictionaries_[static_cast<std::size_t>(dimension)];
    const std::string_view table = TableOf(dimension).table;
    specs.push_back(
        {&d.find, FindIdSql(kSqliteDialect, dimension), fmt::format("read {} ids", table)});
    specs.push_back(
        {&d.add, AddEntrySql(kSqliteDialect, dimension), fmt::format("write {}", table)});
    specs.push_back({&d.entry, EntrySql(kSqliteDialect, dimension), fmt::format("read {}", table)});
  }
  for (const Spec& spec : specs) {
    auto stmt = db.Prepare(spec.sql, spec.what);
    if (!stmt) return stmt.status();
    *spec.stmt = std::move(*stmt);
  }
  return tables;
}

Result<std::int64_t> SqliteHourTables::Intern(Dimension dimension, const DimensionKey& key) {
  DictionaryStatements& d = dictionaries_[static_cast<std::size_t>(dimension)];
  // Found, else added (SQLite has one writer at a time: the insert cannot lose a race).
  for (SqliteStmt* stmt : {&d.find, &d.add}) {
    for (std::size_t i = 0; i < key.size(); ++i) stmt->Bind(static_cast<int>(i) + 1, key[i]);
    std::optional<std::int64_t> id;
    Status read = stmt->ForEachRow([&] {
      id = stmt->Int(0);
      return Status::Ok();
    });
    if (!read) return read.error();
    if (id) return *id;
  }
  return Internal(fmt::format("{}: adding an entry returned no id", TableOf(dimension).table));
}

Status SqliteHourTables::Lookup(Dimension dimension, std::span<const std::int64_t> ids,
                                const std::function<Status(std::int64_t, DimensionKey)>& on_entry) {
  SqliteStmt& q = dictionaries_[static_cast<std::size_t>(dimension)].entry;
  const std::size_t columns = TableOf(dimension).columns.size();
  for (std::int64_t id : ids) {
    q.Bind(1, id);
    Status read = q.ForEachRow([&] {
      DimensionKey key;
      for (std::size_t i = 0; i < columns; ++i) key.push_back(q.Text(static_cast<int>(i)));
      return on_entry(id, std::move(key));
    });
    if (!read) return read;
  }
  return Status::Ok();
}

Status SqliteHourTables::PutHour(const StoredHour& row) {
  put_hour_.Bind(1, row.hour);
  put_hour_.Bind(2, row.gpu);
  put_hour_.Bind(3, row.placement);
  put_hour_.BindBlob(4, row.record);
  return put_hour_.Run();
}

Status SqliteHourTables::ForEachHour(std::int64_t from_hour, std::int64_t to_hour,
                                     const std::function<Status(const StoredHour& row)>& on_row) {
  SqliteStmt& q = read_hours_;
  q.Bind(1, from_hour);
  q.Bind(2, to_hour);
  StoredHour row;  // reused: the record keeps its capacity
  return q.ForEachRow([&] {
    row.hour = q.Int(0);
    row.gpu = q.Int(1);
    row.placement = q.Int(2);
    row.record.assign(q.Blob(3));
    return on_row(row);
  });
}

Status SqliteHourTables::PodLabels(std::span<const PodKey> pods, LedgerScan& scan) {
  SqliteStmt& q = pod_labels_;
  for (const PodKey& key : pods) {
    const auto& [ns, pod, uid] = key;
    q.Bind(1, ns);
    q.Bind(2, pod);
    q.Bind(3, uid);
    Status read = q.ForEachRow([&] {
      return scan.OnPodLabel(std::get<0>(key), std::get<1>(key), std::get<2>(key), q.Text(0),
                             q.Text(1));
    });
    if (!read) return read;
  }
  return Status::Ok();
}

Status SqliteHourTables::NamespaceLabels(std::span<const std::string> namespaces,
                                         LedgerScan& scan) {
  SqliteStmt& q = namespace_labels_;
  for (const std::string& ns : namespaces) {
    q.Bind(1, ns);
    Status read = q.ForEachRow([&] { return scan.OnNamespaceLabel(ns, q.Text(0), q.Text(1)); });
    if (!read) return read;
  }
  return Status::Ok();
}

}  // namespace gpuledger::store
