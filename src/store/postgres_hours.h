#pragma once
// The PostgreSQL dialect of the compact hour tables (store/compact_hours.h): the ledger's own
// and the migration's, on one connection. Writes are held until FinishWrites, then the span's
// keys are deleted and its rows streamed in with one COPY; reads go through cursors; records
// travel as bytea in hex.

#include <map>
#include <utility>

#include "store/compact_hours.h"
#include "store/postgres_db.h"

namespace gpuledger::store {

class PgHourTables final : public HourTables {
 public:
  explicit PgHourTables(PgConn& conn) : conn_(conn) {}

  Result<std::int64_t> Intern(Dimension dimension, const DimensionKey& key) override;
  Status Lookup(Dimension dimension, std::span<const std::int64_t> ids,
                const std::function<Status(std::int64_t, DimensionKey)>& on_entry) override;
  Status PutHour(const StoredHour& row) override;
  Status FinishWrites() override;
  void DiscardWrites() override { pending_.clear(); }
  Status ForEachHour(std::int64_t from_hour, std::int64_t to_hour,
                     const std::function<Status(const StoredHour& row)>& on_row) override;
  Status PodLabels(std::span<const PodKey> pods, LedgerScan& scan) override;
  Status NamespaceLabels(std::span<const std::string> namespaces, LedgerScan& scan) override;

 private:
  PgConn& conn_;
  // Held writes by (hour, gpu): a key written twice in a span keeps the later.
  std::map<std::pair<std::int64_t, std::int64_t>, StoredHour> pending_;
};

}  // namespace gpuledger::store
