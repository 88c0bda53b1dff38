#pragma once
// What the ledger's meta says of the ledger as a whole, read in one place: the currency its
// prices are in and the cluster it records.

#include <string>

#include "common/result.h"
#include "store/ledger_store.h"

namespace gpuledger::store {

struct LedgerIdentity {
  std::string currency = "USD";  // the meta's "currency"; USD where none was recorded
  std::string cluster;           // the meta's "cluster"; "" where none was recorded
};

Result<LedgerIdentity> ReadLedgerIdentity(LedgerStore& store);

}  // namespace gpuledger::store
