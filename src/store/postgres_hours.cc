#include "store/postgres_hours.h"

#include <fmt/format.h>

#include <string_view>
#include <vector>

namespace gpuledger::store {
namespace {

// Labels are asked for this many pods at a time: one round trip each, parameters of bounded size.
constexpr std::size_t kLabelBatch = 10'000;

// bytea in its hex text form, "\x0a1b..." (COPY's text format doubles the backslash).
void AppendHex(std::string_view bytes, std::string& out) {
  constexpr char kDigits[] = "0123456789abcdef";
  out += "\\\\x";
  for (char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0xf]);
  }
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool DecodeHex(std::string_view text, std::string& out) {
  if (text.size() < 2 || text[0] != '\\' || text[1] != 'x' || text.size() % 2 != 0) return false;
  out.clear();
  for (std::size_t i = 2; i < text.size(); i += 2) {
    const int hi = HexDigit(text[i]);
    const int lo = HexDigit(text[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return true;
}

}  // namespace

Result<std::int64_t> PgHourTables::Intern(Dimension dimension, const DimensionKey& key) {
  PgParams params;
  for (const std::string& part : key) params.Add(part);
  const std::string_view table = TableOf(dimension).table;
  const std::string find = FindIdSql(kPostgresDialect, dimension);
  // Found, else added, else added meanwhile by another writer (whose commit the insert waited
  // for): found then.
  for (const std::string& sql : {find, AddEntrySql(kPostgresDialect, dimension), find}) {
    auto r = conn_.Exec(fmt::format("write {}", table), sql, params);
    if (!r) return r.error();
    std::int64_t id = 0;
    if (r->rows() == 1 && r->Int(0, 0, id)) return id;
  }
  return Internal(fmt::format("{}: {}: adding an entry returned no id", conn_.server(), table));
}

Status PgHourTables::Lookup(Dimension dimension, std::span<const std::int64_t> ids,
                            const std::function<Status(std::int64_t, DimensionKey)>& on_entry) {
  const DimensionTable& table = TableOf(dimension);
  PgParams params;
  params.Add(Int64ArrayLiteral(ids));
  return ForEachPgRow(conn_, fmt::format("read {}", table.table),
                      fmt::format("SELECT id, {} FROM {} WHERE id = ANY($1::bigint[])",
                                  fmt::join(table.columns, ", "), table.table),
                      params, [&](PgRow& row) -> Status {
                        const std::int64_t id = row.Int(0);
                        DimensionKey key;
                        for (std::size_t i = 0; i < table.columns.size(); ++i)
                          key.push_back(row.Text(static_cast<int>(i) + 1));
                        if (row.bad_col() >= 0)
                          return Internal(fmt::format("{}: read {}: id is not a number",
                                                      conn_.server(), table.table));
                        return on_entry(id, std::move(key));
                      });
}

Status PgHourTables::PutHour(const StoredHour& row) {
  pending_[{row.hour, row.gpu}] = row;
  return Status::Ok();
}

Status PgHourTables::FinishWrites() {
  if (pending_.empty()) return Status::Ok();
  std::vector<std::int64_t> hours;
  std::vector<std::int64_t> gpus;
  std::string copy;
  for (const auto& [key, row] : pending_) {
    hours.push_back(row.hour);
    gpus.push_back(row.gpu);
    fmt::format_to(std::back_inserter(copy), "{}\t{}\t{}\t", row.hour, row.gpu, row.placement);
    AppendHex(row.record, copy);
    copy.push_back('\n');
  }
  pending_.clear();
  PgParams keys;
  keys.Add(Int64ArrayLiteral(hours)).Add(Int64ArrayLiteral(gpus));
  auto deleted = conn_.Exec("delete hours",
                            "DELETE FROM hours WHERE (hour, gpu) IN "
                            "(SELECT * FROM unnest($1::integer[], $2::integer[]))",
                            keys);
  if (!deleted) return deleted.status();
  return conn_.CopyIn("write hours", "COPY hours (hour, gpu, placement, record) FROM STDIN", copy);
}

Status PgHourTables::ForEachHour(std::int64_t from_hour, std::int64_t to_hour,
                                 const std::function<Status(const StoredHour& row)>& on_row) {
  // Hours past the 32-bit column read as none rather than failing the cast.
  constexpr std::int64_t kLast = INT32_MAX;
  PgParams params;
  params.Add(std::clamp<std::int64_t>(from_hour, -kLast, kLast))
      .Add(std::clamp<std::int64_t>(to_hour, -kLast, kLast));
  StoredHour stored;  // reused: the record keeps its capacity
  return ForEachPgRow(conn_, "read hours",
                      "SELECT hour, gpu, placement, record FROM hours "
                      "WHERE hour >= $1 AND hour < $2 ORDER BY hour, gpu",
                      params, [&](PgRow& row) -> Status {
                        stored.hour = row.Int(0);
                        stored.gpu = row.Int(1);
                        stored.placement = row.Int(2);
                        if (row.bad_col() >= 0 || !DecodeHex(row.View(3), stored.record)) {
                          return Internal(
                              fmt::format("{}: read hours: a row that is not "
                                          "integers and a bytea",
                                          conn_.server()));
                        }
                        return on_row(stored);
                      });
}

Status PgHourTables::PodLabels(std::span<const PodKey> pods, LedgerScan& scan) {
  for (std::size_t first = 0; first < pods.size(); first += kLabelBatch) {
    const auto batch = pods.subspan(first, std::min(kLabelBatch, pods.size() - first));
    std::array<std::vector<std::string_view>, 3> cols;
    for (const auto& [ns, pod, uid] : batch) {
      cols[0].push_back(ns);
      cols[1].push_back(pod);
      cols[2].push_back(uid);
    }
    PgParams params;
    for (const auto& col : cols) params.Add(TextArrayLiteral(col));
    Status read = ForEachPgRow(
        conn_, "read pod_labels",
        "SELECT l.namespace, l.pod, l.pod_uid, l.key, l.value FROM pod_labels AS l "
        "JOIN unnest($1::text[], $2::text[], $3::text[]) AS p (namespace, pod, pod_uid) "
        "ON l.namespace = p.namespace AND l.pod = p.pod AND l.pod_uid = p.pod_uid",
        params, [&](PgRow& row) {
          return scan.OnPodLabel(row.Text(0), row.Text(1), row.Text(2), row.Text(3), row.Text(4));
        });
    if (!read) return read;
  }
  return Status::Ok();
}

Status PgHourTables::NamespaceLabels(std::span<const std::string> namespaces, LedgerScan& scan) {
  if (namespaces.empty()) return Status::Ok();
  std::vector<std::string_view> names(namespaces.begin(), namespaces.end());
  PgParams params;
  params.Add(TextArrayLiteral(names));
  return ForEachPgRow(conn_, "read namespace_labels",
                      "SELECT namespace, key, value FROM namespace_labels "
                      "WHERE namespace = ANY($1::text[])",
                      params, [&](PgRow& row) {
                        return scan.OnNamespaceLabel(row.Text(0), row.Text(1), row.Text(2));
                      });
}

}  // namespace gpuledger::store
