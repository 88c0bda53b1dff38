// OpenLedger: picks the store a ledger spec names.

#include "store/ledger_store.h"
#include "store/postgres_db.h"

namespace gpuledger::store {

bool IsPostgresLedgerSpec(std::string_view spec) {
  return spec.starts_with("postgres://") || spec.starts_with("postgresql://");
}

std::string SqliteLedgerPath(std::string_view spec) {
  if (spec.starts_with("sqlite:")) spec.remove_prefix(7);
  return std::string(spec);
}

std::string DisplayLedgerSpec(std::string_view spec) {
  if (!IsPostgresLedgerSpec(spec)) return std::string(spec);
  return RedactPostgresUrl(std::string(spec));
}

Result<std::unique_ptr<LedgerStore>> OpenLedger(const std::string& spec) {
  if (IsPostgresLedgerSpec(spec)) return OpenPostgresLedger(spec);
  return OpenSqliteLedger(SqliteLedgerPath(spec));
}

Result<std::unique_ptr<LedgerStore>> OpenLedgerReadOnly(const std::string& spec) {
  if (IsPostgresLedgerSpec(spec)) return OpenPostgresLedger(spec, {.read_only = true});
  return OpenSqliteLedger(SqliteLedgerPath(spec), {.read_only = true});
}

}  // namespace gpuledger::store
